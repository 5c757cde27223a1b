"""Synthetic problem (kagent synth, seed 0, candidate 402)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
SEQ_LEN = 32
FEATURES = 64
MEMORY_LEN = 128
FF_DIM = 128
OUT_FEATURES = 512
COLS = 64
NUM_HEADS = 1
PRECISION = "tf32"


class Model(nn.Module):
    """TransformerDecoderLayer -> linear (FEATURES -> OUT_FEATURES) -> matmul (OUT_FEATURES -> COLS) -> softsign -> cummin (dim -1)."""

    def __init__(self, features, num_heads, ff_dim, out_features):
        super().__init__()
        self.transformer_decoder_layer = nn.TransformerDecoderLayer(features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='relu')
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor, memory: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.transformer_decoder_layer(x, memory)
        h = F.linear(h, self.weight, self.bias)
        h = torch.matmul(h, y)
        h = F.softsign(h)
        return torch.cummin(h, dim=-1)[0]


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    y = torch.randn(BATCH, OUT_FEATURES, COLS)
    return [x, memory, y]


def get_init_inputs():
    return [FEATURES, NUM_HEADS, FF_DIM, OUT_FEATURES]
