"""Synthetic problem (kagent synth, seed 0, candidate 77)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 16
LENGTH = 16384
SMALL_SIZES = {"BATCH": 4, "LENGTH": 512}


class Model(nn.Module):
    """BatchNorm1d (training mode: batch statistics) -> mish -> concat (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, channels):
        super().__init__()
        self.batch_norm1d = nn.BatchNorm1d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.batch_norm1d(x)
        h = F.mish(h)
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS]
