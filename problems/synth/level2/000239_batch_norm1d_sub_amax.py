"""Synthetic problem (kagent synth, seed 0, candidate 239)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 8192
COLS = 8192
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256, "COLS": 256}


class Model(nn.Module):
    """BatchNorm1d (training mode: batch statistics) -> - (residual) -> amax over dim 1 -> matmul (LENGTH -> COLS)."""

    def __init__(self, channels):
        super().__init__()
        self.batch_norm1d = nn.BatchNorm1d(channels)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.batch_norm1d(x)
        h = h - x
        h = torch.amax(h, dim=1)
        return torch.matmul(h, y)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(LENGTH, COLS)
    return [x, y]


def get_init_inputs():
    return [CHANNELS]
