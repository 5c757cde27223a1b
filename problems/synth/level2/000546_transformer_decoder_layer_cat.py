"""Synthetic problem (kagent synth, seed 0, candidate 546)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 512
FEATURES = 256
MEMORY_LEN = 256
FF_DIM = 512
NUM_HEADS = 2
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 64, "MEMORY_LEN": 64, "FF_DIM": 128}


class Model(nn.Module):
    """TransformerDecoderLayer -> concat (dim -1)."""

    def __init__(self, features, num_heads, ff_dim):
        super().__init__()
        self.transformer_decoder_layer = nn.TransformerDecoderLayer(features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='gelu')

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = self.transformer_decoder_layer(x, memory)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    return [x, memory]


def get_init_inputs():
    return [FEATURES, NUM_HEADS, FF_DIM]
