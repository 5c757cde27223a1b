"""Synthetic problem (kagent synth, seed 0, candidate 140)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 32
SCALE_FACTOR = 2
LAMBD = 0.25
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """cosine_similarity -> upsample x2 nearest-exact -> nansum over dim [2, 3] -> Hardshrink."""

    def __init__(self, scale_factor, lambd):
        super().__init__()
        self.scale_factor = scale_factor
        self.hardshrink = nn.Hardshrink(lambd=lambd)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.cosine_similarity(x, y, dim=1)
        h = F.interpolate(h, scale_factor=self.scale_factor, mode='nearest-exact')
        h = torch.nansum(h, dim=[2, 3])
        return self.hardshrink(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [SCALE_FACTOR, LAMBD]
