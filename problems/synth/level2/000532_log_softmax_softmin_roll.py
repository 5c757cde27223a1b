"""Synthetic problem (kagent synth, seed 0, candidate 532)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
OUT_CHANNELS = 8
SHIFT = 1
KERNEL_SIZE = 2
STRIDE = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """LogSoftmax (dim 1) -> Softmin (dim 1) -> roll (dim 2) -> conv_transpose2d 2x2 stride 2."""

    def __init__(self, shift, channels, out_channels, kernel_size, stride):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.softmin = nn.Softmin(dim=1)
        self.shift = shift
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.log_softmax(x)
        h = self.softmin(h)
        h = torch.roll(h, shifts=self.shift, dims=2)
        return F.conv_transpose2d(h, self.weight, self.bias, stride=self.stride)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SHIFT, CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE]
