"""Synthetic problem (kagent synth, seed 0, candidate 458)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 16384
OUT_CHANNELS = 16
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 16, "LENGTH": 512}


class Model(nn.Module):
    """elu -> Hardswish -> softmax (dim 1) -> conv_transpose1d 4 stride 2 -> transpose(1, 2)."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.hardswish = nn.Hardswish()
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size) / math.sqrt(channels * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.elu(x)
        h = self.hardswish(h)
        h = F.softmax(h, dim=1)
        h = F.conv_transpose1d(h, self.weight, self.bias, stride=self.stride, padding=self.padding)
        return torch.swapaxes(h, 1, 2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
