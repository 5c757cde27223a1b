"""Synthetic problem (kagent synth, seed 0, candidate 110)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """log_softmax (dim 1) -> - (residual) -> upsample x2 nearest."""

    def __init__(self, scale_factor):
        super().__init__()
        self.upsampling_nearest2d = nn.UpsamplingNearest2d(scale_factor=scale_factor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.log_softmax(x, dim=1)
        h = h - x
        return self.upsampling_nearest2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR]
