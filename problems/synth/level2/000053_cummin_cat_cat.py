"""Synthetic problem (kagent synth, seed 0, candidate 53)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 32
WIDTH = 64
SMALL_SIZES = {"BATCH": 2, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """cummin (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummin(x, dim=1)[0]
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
