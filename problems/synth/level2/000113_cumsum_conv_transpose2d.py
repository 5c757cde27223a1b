"""Synthetic problem (kagent synth, seed 0, candidate 113)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 8
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """cumsum (dim -1) -> conv_transpose2d 4x4 stride 2."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(x, dim=-1)
        return F.conv_transpose2d(h, self.weight, self.bias, stride=self.stride, padding=self.padding)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
