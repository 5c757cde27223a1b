"""Synthetic problem (kagent synth, seed 0, candidate 165)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
MEMORY_LEN = 1024
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16, "MEMORY_LEN": 32}


class Model(nn.Module):
    """min over dim 3 -> scaled_dot_product_attention (cross)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = torch.min(x, dim=3)[0]
        return F.scaled_dot_product_attention(h, memory, memory)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).exp()
    memory = torch.randn(BATCH, MEMORY_LEN, HEIGHT)
    return [x, memory]


def get_init_inputs():
    return []
