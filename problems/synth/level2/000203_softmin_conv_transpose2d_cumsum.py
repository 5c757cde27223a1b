"""Synthetic problem (kagent synth, seed 0, candidate 203)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 64
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Softmin (dim 2) -> conv_transpose2d 4x4 stride 2 -> cumsum (dim 1) -> - (residual)."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.softmin = nn.Softmin(dim=2)
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softmin(x)
        h2 = F.conv_transpose2d(h, self.weight, self.bias, stride=self.stride, padding=self.padding)
        h = torch.cumsum(h2, dim=1)
        return h - h2


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
