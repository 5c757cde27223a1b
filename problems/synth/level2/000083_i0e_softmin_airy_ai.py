"""Synthetic problem (kagent synth, seed 0, candidate 83)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
DEPTH = 64
HEIGHT = 32
WIDTH = 64
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """i0e -> softmin (dim 1) -> airy_ai -> maximum (residual) -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.special.i0e(x)
        h2 = F.softmin(h1, dim=1)
        h = torch.special.airy_ai(h2)
        h = torch.maximum(h, h2)
        return h + h1


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
