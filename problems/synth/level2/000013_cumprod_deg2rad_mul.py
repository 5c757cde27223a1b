"""Synthetic problem (kagent synth, seed 0, candidate 13)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 128
HEIGHT = 128
WIDTH = 32
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """cumprod (dim 1) -> deg2rad -> * (residual) -> + (residual) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.cumprod(x, dim=1)
        h2 = torch.deg2rad(h1)
        h = h2 * h1
        h = h + h1
        return torch.cat([h, h2], dim=1)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
