"""Synthetic problem (kagent synth, seed 0, candidate 220)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
OUT_CHANNELS = 8
KERNEL_SIZE = 2
STRIDE = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """concat (dim 1) -> conv_transpose2d 2x2 stride 2."""

    def __init__(self, channels, out_channels, kernel_size, stride):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2 * channels, out_channels, kernel_size, kernel_size) / math.sqrt((2 * channels) * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        return F.conv_transpose2d(h, self.weight, self.bias, stride=self.stride)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE]
