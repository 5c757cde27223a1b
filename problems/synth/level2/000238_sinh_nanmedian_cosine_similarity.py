"""Synthetic problem (kagent synth, seed 0, candidate 238)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 16
LENGTH = 8192
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256}


class Model(nn.Module):
    """sinh -> nanmedian over dim 2 -> cosine_similarity."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.sinh(x)
        h = torch.nanmedian(h, dim=2)[0]
        return F.cosine_similarity(h, y, dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS)
    return [x, y]


def get_init_inputs():
    return []
