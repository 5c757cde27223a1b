"""Synthetic problem (kagent synth, seed 0, candidate 250)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 16384
OUT_CHANNELS = 64
KERNEL_SIZE = 7
PADDING = 3
GROUPS = 4
SMALL_SIZES = {"BATCH": 8, "LENGTH": 1024}


class Model(nn.Module):
    """conv1d 7 -> log_softmax (dim 1) -> concat (dim 1)."""

    def __init__(self, out_channels, channels, kernel_size, padding, groups):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, channels // 4, kernel_size) / math.sqrt((channels // 4) * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.padding = padding
        self.groups = groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.conv1d(x, self.weight, self.bias, padding=self.padding, groups=self.groups)
        h = F.log_softmax(h1, dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, PADDING, GROUPS]
