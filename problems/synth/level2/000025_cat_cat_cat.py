"""Synthetic problem (kagent synth, seed 0, candidate 25)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 128
WIDTH = 64
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """concat (dim 1) -> concat (dim 1) -> concat (dim 1) -> neg."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, x], dim=1)
        return torch.neg(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return []
