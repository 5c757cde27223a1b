"""Synthetic problem (kagent synth, seed 0, candidate 57)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
OUT_CHANNELS = 32
KERNEL_SIZE = 3
PADDING = 1
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """Conv2d 3x3."""

    def __init__(self, channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
