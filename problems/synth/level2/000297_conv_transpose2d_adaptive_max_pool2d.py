"""Synthetic problem (kagent synth, seed 0, candidate 297)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 64
KERNEL_SIZE = 3
PADDING = 1
OUTPUT_SIZE = 4
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """ConvTranspose2d 3x3 -> adaptive_max_pool2d to 4."""

    def __init__(self, channels, out_channels, kernel_size, padding, output_size):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(channels, out_channels, kernel_size, padding=padding)
        self.output_size = output_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_transpose2d(x)
        return F.adaptive_max_pool2d(h, output_size=self.output_size)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, OUTPUT_SIZE]
