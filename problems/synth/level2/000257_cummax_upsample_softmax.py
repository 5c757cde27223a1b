"""Synthetic problem (kagent synth, seed 0, candidate 257)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 3
HEIGHT = 256
WIDTH = 512
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """cummax (dim 1) -> upsample x2 nearest -> softmax (dim 1)."""

    def __init__(self, scale_factor):
        super().__init__()
        self.upsample = nn.Upsample(scale_factor=scale_factor, mode='nearest')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummax(x, dim=1)[0]
        h = self.upsample(h)
        return torch.softmax(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR]
