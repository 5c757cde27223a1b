"""Synthetic problem (kagent synth, seed 0, candidate 439)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
OUT_CHANNELS = 32
OUT_CHANNELS_2 = 8
KERNEL_SIZE = 3
PADDING = 1
KERNEL_SIZE_2 = 2
STRIDE = 2
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """logaddexp -> Conv2d 3x3 -> tril -> ConvTranspose2d 2x2 stride 2."""

    def __init__(self, channels, out_channels, kernel_size, padding, dtype, out_channels_2, kernel_size_2, stride):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding, dtype=dtype)
        self.conv_transpose2d = nn.ConvTranspose2d(out_channels, out_channels_2, kernel_size_2, stride=stride, dtype=dtype)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.logaddexp(x, y)
        h = self.conv2d(h)
        h = torch.tril(h)
        return self.conv_transpose2d(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, DTYPE, OUT_CHANNELS_2, KERNEL_SIZE_2, STRIDE]
