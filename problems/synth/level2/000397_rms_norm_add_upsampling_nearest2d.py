"""Synthetic problem (kagent synth, seed 0, candidate 397)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 3
HEIGHT = 512
WIDTH = 256
OUT_CHANNELS = 32
EPS = 1e-05
SCALE_FACTOR = 2
KERNEL_SIZE = 3
PADDING = 1
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """RMSNorm -> + (residual) -> upsample x2 nearest -> ConvTranspose2d 3x3."""

    def __init__(self, width, eps, scale_factor, channels, out_channels, kernel_size, padding):
        super().__init__()
        self.rms_norm = nn.RMSNorm(width, eps=eps)
        self.upsampling_nearest2d = nn.UpsamplingNearest2d(scale_factor=scale_factor)
        self.conv_transpose2d = nn.ConvTranspose2d(channels, out_channels, kernel_size, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rms_norm(x)
        h = h + x
        h = self.upsampling_nearest2d(h)
        return self.conv_transpose2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [WIDTH, EPS, SCALE_FACTOR, CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
