"""Synthetic problem (kagent synth, seed 0, candidate 457)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 16384
MIN_VAL = -2.0
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 4, "LENGTH": 256}


class Model(nn.Module):
    """PairwiseDistance -> softmax (dim -1) -> softmin (dim -1) -> Hardtanh."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.pairwise_distance = nn.PairwiseDistance()
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.pairwise_distance(x, y)
        h = F.softmax(h, dim=-1)
        h = F.softmin(h, dim=-1)
        return self.hardtanh(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x, y]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
