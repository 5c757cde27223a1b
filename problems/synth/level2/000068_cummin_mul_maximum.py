"""Synthetic problem (kagent synth, seed 0, candidate 68)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 128
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """cummin (dim -1) -> * (residual) -> maximum (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.cummin(x, dim=-1)[0]
        h = h1 * x
        return torch.maximum(h, h1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
