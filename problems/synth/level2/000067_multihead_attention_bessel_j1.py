"""Synthetic problem (kagent synth, seed 0, candidate 67)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 512
MEMORY_LEN = 256
NUM_HEADS = 2
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 64, "MEMORY_LEN": 32}


class Model(nn.Module):
    """MultiheadAttention -> bessel_j1."""

    def __init__(self, features, num_heads):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(features, num_heads, batch_first=True)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = self.multihead_attention(x, memory, memory, need_weights=False)[0]
        return torch.special.bessel_j1(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    return [x, memory]


def get_init_inputs():
    return [FEATURES, NUM_HEADS]
