"""Synthetic problem (kagent synth, seed 0, candidate 288)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 16
LENGTH = 16384
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """Hardsigmoid -> nansum over dim 2."""

    def __init__(self):
        super().__init__()
        self.hardsigmoid = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.hardsigmoid(x)
        return torch.nansum(h, dim=2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
