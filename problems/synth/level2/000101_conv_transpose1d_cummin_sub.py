"""Synthetic problem (kagent synth, seed 0, candidate 101)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 16
LENGTH = 16384
OUT_CHANNELS = 32
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """conv_transpose1d 4 stride 2 -> cummin (dim 1) -> - (residual)."""

    def __init__(self, channels, out_channels, kernel_size, dtype, stride, padding):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size, dtype=dtype) / math.sqrt(channels * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels, dtype=dtype))
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.conv_transpose1d(x, self.weight, self.bias, stride=self.stride, padding=self.padding)
        h = torch.cummin(h1, dim=1)[0]
        return h - h1


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, DTYPE, STRIDE, PADDING]
