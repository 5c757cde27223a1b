"""Synthetic problem (kagent synth, seed 0, candidate 467)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 64
KERNEL_SIZE = 7
PADDING = 3
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """Softmin (dim -1) -> Conv2d 7x7 -> Softsign -> nansum over dim [2, 3]."""

    def __init__(self, channels, out_channels, kernel_size, padding):
        super().__init__()
        self.softmin = nn.Softmin(dim=-1)
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding, padding_mode='circular')
        self.softsign = nn.Softsign()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softmin(x)
        h = self.conv2d(h)
        h = self.softsign(h)
        return torch.nansum(h, dim=[2, 3])


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
