"""Synthetic problem (kagent synth, seed 0, candidate 81)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 8
LENGTH = 16384
SMALL_SIZES = {"BATCH": 16, "LENGTH": 512}


class Model(nn.Module):
    """log_ndtr -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.special.log_ndtr(x)
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
