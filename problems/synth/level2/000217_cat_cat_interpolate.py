"""Synthetic problem (kagent synth, seed 0, candidate 217)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 128
WIDTH = 64
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """concat (dim 1) -> concat (dim 1) -> upsample x2 nearest-exact -> upsample x2 nearest."""

    def __init__(self, scale_factor):
        super().__init__()
        self.scale_factor = scale_factor
        self.upsampling_nearest2d = nn.UpsamplingNearest2d(scale_factor=scale_factor)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.cat([h, y], dim=1)
        h = F.interpolate(h, scale_factor=self.scale_factor, mode='nearest-exact')
        return self.upsampling_nearest2d(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [SCALE_FACTOR]
