"""Synthetic problem (kagent synth, seed 0, candidate 21)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 32
WIDTH = 32
OUT_CHANNELS = 16
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """ConvTranspose3d 4x4x4 stride 2."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose3d(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
