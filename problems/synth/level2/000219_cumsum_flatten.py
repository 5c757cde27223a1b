"""Synthetic problem (kagent synth, seed 0, candidate 219)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 32
LENGTH = 16384
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """cumsum (dim 1) -> flatten."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(x, dim=1)
        return self.flatten(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
