"""Synthetic problem (kagent synth, seed 0, candidate 28)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 4096
OUT_CHANNELS = 32
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256}


class Model(nn.Module):
    """ConvTranspose1d 4 stride 2."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_transpose1d = nn.ConvTranspose1d(channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose1d(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
