"""Synthetic problem (kagent synth, seed 0, candidate 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """upsample x2 bilinear -> *."""

    def __init__(self, scale_factor):
        super().__init__()
        self.upsampling_bilinear2d = nn.UpsamplingBilinear2d(scale_factor=scale_factor)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.upsampling_bilinear2d(x)
        return h * y


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, SCALE_FACTOR * HEIGHT, SCALE_FACTOR * WIDTH)
    return [x, y]


def get_init_inputs():
    return [SCALE_FACTOR]
