"""Synthetic problem (kagent synth, seed 0, candidate 183)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
OUT_CHANNELS = 8
KERNEL_SIZE = 3
PADDING = 1
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """ConvTranspose2d 3x3."""

    def __init__(self, channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose2d(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
