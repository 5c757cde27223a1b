"""Synthetic problem (kagent synth, seed 0, candidate 58)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
OUT_CHANNELS = 64
OUT_CHANNELS_2 = 32
KERNEL_SIZE = 5
STRIDE = 2
PADDING = 2
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """LogSoftmax (dim 1) -> conv2d 5x5 stride 2 -> Conv2d 5x5 -> GLU (dim 1)."""

    def __init__(self, out_channels, channels, kernel_size, stride, padding, out_channels_2):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.weight = nn.Parameter(torch.randn(out_channels, channels, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.padding = padding
        self.conv2d = nn.Conv2d(out_channels, out_channels_2, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.log_softmax(x)
        h = F.conv2d(h, self.weight, self.bias, stride=self.stride, padding=self.padding)
        h = self.conv2d(h)
        return F.glu(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, STRIDE, PADDING, OUT_CHANNELS_2]
