"""Synthetic problem (kagent synth, seed 0, candidate 325)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """tanhshrink -> maximum (residual) -> upsample x2 bilinear."""

    def __init__(self, scale_factor):
        super().__init__()
        self.upsampling_bilinear2d = nn.UpsamplingBilinear2d(scale_factor=scale_factor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.tanhshrink(x)
        h = torch.maximum(h, x)
        return self.upsampling_bilinear2d(h)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR]
