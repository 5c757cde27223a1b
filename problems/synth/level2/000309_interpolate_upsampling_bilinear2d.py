"""Synthetic problem (kagent synth, seed 0, candidate 309)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 128
WIDTH = 128
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """upsample x2 nearest -> upsample x2 bilinear."""

    def __init__(self, scale_factor):
        super().__init__()
        self.scale_factor = scale_factor
        self.upsampling_bilinear2d = nn.UpsamplingBilinear2d(scale_factor=scale_factor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.interpolate(x, scale_factor=self.scale_factor, mode='nearest')
        return self.upsampling_bilinear2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR]
