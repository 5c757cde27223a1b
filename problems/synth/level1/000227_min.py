"""Synthetic problem (kagent synth, seed 0, candidate 227)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """min over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=1)[0]


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return []
