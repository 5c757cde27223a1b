"""Synthetic problem (kagent synth, seed 0, candidate 298)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 16384
KERNEL_SIZE = 2
NORM_TYPE = 2
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """LPPool1d 2 -> BatchNorm1d (training mode: batch statistics) -> cummax (dim 1)."""

    def __init__(self, norm_type, kernel_size, channels):
        super().__init__()
        self.lp_pool1d = nn.LPPool1d(norm_type=norm_type, kernel_size=kernel_size)
        self.batch_norm1d = nn.BatchNorm1d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lp_pool1d(x)
        h = self.batch_norm1d(h)
        return torch.cummax(h, dim=1)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH).exp()]


def get_init_inputs():
    return [NORM_TYPE, KERNEL_SIZE, CHANNELS]
