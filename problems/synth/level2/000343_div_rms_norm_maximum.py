"""Synthetic problem (kagent synth, seed 0, candidate 343)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
OUT_CHANNELS = 32
EPS = 1e-06
KERNEL_SIZE = 3
PADDING = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """/ -> RMSNorm -> maximum (residual) -> ConvTranspose2d 3x3 -> BatchNorm2d (training mode: batch statistics)."""

    def __init__(self, channels, dtype, width, eps, out_channels, kernel_size, padding):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1, dtype=dtype).exp())
        self.rms_norm = nn.RMSNorm(width, eps=eps, dtype=dtype)
        self.conv_transpose2d = nn.ConvTranspose2d(channels, out_channels, kernel_size, padding=padding, dtype=dtype)
        self.batch_norm2d = nn.BatchNorm2d(out_channels, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = x / self.scale
        h = self.rms_norm(h1)
        h = torch.maximum(h, h1)
        h = self.conv_transpose2d(h)
        return self.batch_norm2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, DTYPE, WIDTH, EPS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
