"""Synthetic problem (kagent synth, seed 0, candidate 538)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 8192
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256}


class Model(nn.Module):
    """softmax (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
