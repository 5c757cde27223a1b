"""Synthetic problem (kagent synth, seed 0, candidate 387)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
LENGTH = 8192
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """flatten -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = self.flatten(x)
        h = torch.cat([h1, y], dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS * LENGTH)
    return [x, y]


def get_init_inputs():
    return []
