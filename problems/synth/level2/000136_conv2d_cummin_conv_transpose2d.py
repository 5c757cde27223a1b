"""Synthetic problem (kagent synth, seed 0, candidate 136)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 8
OUT_CHANNELS_2 = 64
KERNEL_SIZE = 7
PADDING = 3
KERNEL_SIZE_2 = 3
PADDING_2 = 1
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """conv2d 7x7 -> cummin (dim -1) -> ConvTranspose2d 3x3."""

    def __init__(self, out_channels, channels, kernel_size, padding, out_channels_2, kernel_size_2, padding_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, channels, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.padding = padding
        self.conv_transpose2d = nn.ConvTranspose2d(out_channels, out_channels_2, kernel_size_2, padding=padding_2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.conv2d(x, self.weight, self.bias, padding=self.padding)
        h = torch.cummin(h, dim=-1)[0]
        return self.conv_transpose2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, PADDING, OUT_CHANNELS_2, KERNEL_SIZE_2, PADDING_2]
