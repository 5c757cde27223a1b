"""Synthetic problem (kagent synth, seed 0, candidate 338)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 8192
OUT_CHANNELS = 64
KERNEL_SIZE = 5
STRIDE = 2
PADDING = 2
SMALL_SIZES = {"BATCH": 4, "LENGTH": 256}


class Model(nn.Module):
    """i0 -> softmax (dim -1) -> conv1d 5 stride 2."""

    def __init__(self, out_channels, channels, kernel_size, stride, padding):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, channels, kernel_size) / math.sqrt(channels * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.i0(x)
        h = torch.softmax(h, dim=-1)
        return F.conv1d(h, self.weight, self.bias, stride=self.stride, padding=self.padding)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
