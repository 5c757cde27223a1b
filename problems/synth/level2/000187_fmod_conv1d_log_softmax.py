"""Synthetic problem (kagent synth, seed 0, candidate 187)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
LENGTH = 16384
OUT_CHANNELS = 16
KERNEL_SIZE = 7
PADDING = 3
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """fmod -> conv1d 7 -> log_softmax (dim 1)."""

    def __init__(self, out_channels, channels, kernel_size, padding):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, channels, kernel_size) / math.sqrt(channels * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.padding = padding

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.fmod(x, y)
        h = F.conv1d(h, self.weight, self.bias, padding=self.padding)
        return F.log_softmax(h, dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH).exp()
    return [x, y]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, PADDING]
