"""Synthetic problem (kagent synth, seed 0, candidate 191)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
LENGTH = 16384
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """+ -> - (residual) -> i1e."""

    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.bias
        h = h - x
        return torch.special.i1e(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS]
