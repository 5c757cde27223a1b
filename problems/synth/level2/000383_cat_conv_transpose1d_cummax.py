"""Synthetic problem (kagent synth, seed 0, candidate 383)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
LENGTH = 4096
OUT_CHANNELS = 32
KERNEL_SIZE = 3
PADDING = 1
LRN_SIZE = 5
SMALL_SIZES = {"BATCH": 8, "LENGTH": 1024}


class Model(nn.Module):
    """concat (dim 1) -> conv_transpose1d 3 -> cummax (dim 1) -> LocalResponseNorm."""

    def __init__(self, channels, out_channels, kernel_size, padding, lrn_size):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2 * channels, out_channels, kernel_size) / math.sqrt((2 * channels) * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.padding = padding
        self.local_response_norm = nn.LocalResponseNorm(lrn_size)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = F.conv_transpose1d(h, self.weight, self.bias, padding=self.padding)
        h = torch.cummax(h, dim=1)[0]
        return self.local_response_norm(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, LRN_SIZE]
