"""Synthetic problem (kagent synth, seed 0, candidate 111)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 8192
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """concat (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.cat([h, y], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x, y]


def get_init_inputs():
    return []
