"""Synthetic problem (kagent synth, seed 0, candidate 353)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
DEPTH = 128
HEIGHT = 64
WIDTH = 32
OUT_CHANNELS = 4
KERNEL_SIZE = 3
PADDING = 1
LAMBD = 0.25
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 8}


class Model(nn.Module):
    """concat (dim 1) -> conv_transpose3d 3x3x3 -> Hardshrink -> concat (dim 1)."""

    def __init__(self, channels, out_channels, kernel_size, padding, lambd):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2 * channels, out_channels, kernel_size, kernel_size, kernel_size) / math.sqrt((2 * channels) * kernel_size * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.padding = padding
        self.hardshrink = nn.Hardshrink(lambd=lambd)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = F.conv_transpose3d(h, self.weight, self.bias, padding=self.padding)
        h = self.hardshrink(h)
        return torch.cat([h, y], dim=1)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, LAMBD]
