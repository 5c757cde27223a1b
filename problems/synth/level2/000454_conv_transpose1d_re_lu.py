"""Synthetic problem (kagent synth, seed 0, candidate 454)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 32
LENGTH = 8192
OUT_CHANNELS = 32
KERNEL_SIZE = 3
PADDING = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """ConvTranspose1d 3 -> ReLU."""

    def __init__(self, channels, out_channels, kernel_size, padding, dtype):
        super().__init__()
        self.conv_transpose1d = nn.ConvTranspose1d(channels, out_channels, kernel_size, padding=padding, dtype=dtype)
        self.re_lu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_transpose1d(x)
        return self.re_lu(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, DTYPE]
