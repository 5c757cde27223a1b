"""Synthetic problem (kagent synth, seed 0, candidate 8)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
LENGTH = 16384
SMALL_SIZES = {"BATCH": 16, "LENGTH": 1024}


class Model(nn.Module):
    """flip (dim -1) -> LayerNorm -> cumsum (dim -1) -> sin -> nansum over dim 1."""

    def __init__(self, length):
        super().__init__()
        self.layer_norm = nn.LayerNorm(length)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.flip(x, dims=[-1])
        h = self.layer_norm(h)
        h = torch.cumsum(h, dim=-1)
        h = torch.sin(h)
        return torch.nansum(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [LENGTH]
