"""Synthetic problem (kagent synth, seed 0, candidate 285)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 64
SMALL_SIZES = {"BATCH": 2, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 8}


class Model(nn.Module):
    """softmax (dim 1) -> * (residual) -> - (residual) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.softmax(x, dim=1)
        h = h1 * x
        h = h - h1
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
