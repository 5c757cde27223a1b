"""Synthetic problem (kagent synth, seed 0, candidate 207)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 128
HEIGHT = 64
WIDTH = 64
SMALL_SIZES = {"BATCH": 2, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """Softmin (dim 1) -> + (residual)."""

    def __init__(self):
        super().__init__()
        self.softmin = nn.Softmin(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softmin(x)
        return h + x


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
