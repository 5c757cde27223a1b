"""Synthetic problem (kagent synth, seed 0, candidate 413)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 512
WIDTH = 256
OUT_CHANNELS = 16
KERNEL_SIZE = 3
PADDING = 1
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """* -> + (residual) -> Conv2d 3x3 -> round -> concat (dim 1)."""

    def __init__(self, channels, out_channels, kernel_size, padding):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1))
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * self.scale
        h = h + x
        h = self.conv2d(h)
        h = torch.round(h)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
