"""Synthetic problem (kagent synth, seed 0, candidate 544)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 128
FEATURES = 256
MEMORY_LEN = 512
FF_DIM = 1024
NUM_HEADS = 4
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 128, "MEMORY_LEN": 128, "FF_DIM": 512}


class Model(nn.Module):
    """TransformerDecoderLayer -> softmax (dim -1)."""

    def __init__(self, features, num_heads, ff_dim, dtype):
        super().__init__()
        self.transformer_decoder_layer = nn.TransformerDecoderLayer(features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='relu', dtype=dtype)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = self.transformer_decoder_layer(x, memory)
        return torch.softmax(h, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES, dtype=DTYPE)
    return [x, memory]


def get_init_inputs():
    return [FEATURES, NUM_HEADS, FF_DIM, DTYPE]
