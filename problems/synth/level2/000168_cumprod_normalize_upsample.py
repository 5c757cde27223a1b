"""Synthetic problem (kagent synth, seed 0, candidate 168)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 32
NORMALIZE_P = 1.0
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """cumprod (dim 1) -> normalize (dim 3) -> upsample x2 nearest-exact."""

    def __init__(self, normalize_p, scale_factor):
        super().__init__()
        self.normalize_p = normalize_p
        self.upsample = nn.Upsample(scale_factor=scale_factor, mode='nearest-exact')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumprod(x, dim=1)
        h = F.normalize(h, dim=3, p=self.normalize_p)
        return self.upsample(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NORMALIZE_P, SCALE_FACTOR]
