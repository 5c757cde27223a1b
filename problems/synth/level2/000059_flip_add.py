"""Synthetic problem (kagent synth, seed 0, candidate 59)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 16
LENGTH = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """flip (dim 1) -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.flip(x, dims=[1])
        return h + x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return []
