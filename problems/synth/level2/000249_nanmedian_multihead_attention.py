"""Synthetic problem (kagent synth, seed 0, candidate 249)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
MEMORY_LEN = 256
NUM_HEADS = 1
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32, "MEMORY_LEN": 64}


class Model(nn.Module):
    """nanmedian over dim 2 -> MultiheadAttention."""

    def __init__(self, width, num_heads):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(width, num_heads, batch_first=True)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = torch.nanmedian(x, dim=2)[0]
        return self.multihead_attention(h, memory, memory, need_weights=False)[0]


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    memory = torch.randn(BATCH, MEMORY_LEN, WIDTH)
    return [x, memory]


def get_init_inputs():
    return [WIDTH, NUM_HEADS]
