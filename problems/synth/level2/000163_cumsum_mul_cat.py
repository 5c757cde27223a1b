"""Synthetic problem (kagent synth, seed 0, candidate 163)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 512
WIDTH = 1024
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """cumsum (dim 2) -> * (residual) -> concat (dim 1) -> hardswish -> * (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(x, dim=2)
        h = h * x
        h3 = torch.cat([h, x], dim=1)
        h = F.hardswish(h3)
        return h * h3


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
