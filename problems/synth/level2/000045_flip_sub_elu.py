"""Synthetic problem (kagent synth, seed 0, candidate 45)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 8
LENGTH = 16384
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """flip (dim 1) -> - (residual) -> elu -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.flip(x, dims=[1])
        h = h - x
        h = F.elu(h)
        return h + x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
