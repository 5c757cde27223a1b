"""Synthetic problem (kagent synth, seed 0, candidate 39)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
MEMORY_LEN = 512
NUM_HEADS = 4
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64, "MEMORY_LEN": 128}


class Model(nn.Module):
    """median over dim 3 -> MultiheadAttention -> - (residual)."""

    def __init__(self, height, num_heads):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(height, num_heads, batch_first=True)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h1 = torch.median(x, dim=3)[0]
        h = self.multihead_attention(h1, memory, memory, need_weights=False)[0]
        return h - h1


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    memory = torch.randn(BATCH, MEMORY_LEN, HEIGHT)
    return [x, memory]


def get_init_inputs():
    return [HEIGHT, NUM_HEADS]
