"""Synthetic problem (kagent synth, seed 0, candidate 132)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 4
DEPTH = 32
HEIGHT = 32
WIDTH = 64
OUT_CHANNELS = 16
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """conv_transpose3d 4x4x4 stride 2 -> LogSoftmax (dim 3) -> Hardsigmoid."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.padding = padding
        self.log_softmax = nn.LogSoftmax(dim=3)
        self.hardsigmoid = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.conv_transpose3d(x, self.weight, self.bias, stride=self.stride, padding=self.padding)
        h = self.log_softmax(h)
        return self.hardsigmoid(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
