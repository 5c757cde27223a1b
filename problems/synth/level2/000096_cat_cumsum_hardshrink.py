"""Synthetic problem (kagent synth, seed 0, candidate 96)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 32
HEIGHT = 32
WIDTH = 64
LAMBD = 0.25
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """concat (dim 1) -> cumsum (dim 1) -> hardshrink -> + (residual) -> concat (dim 1)."""

    def __init__(self, lambd):
        super().__init__()
        self.lambd = lambd

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h2 = torch.cumsum(h, dim=1)
        h = F.hardshrink(h2, lambd=self.lambd)
        h = h + h2
        return torch.cat([h, y], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [LAMBD]
