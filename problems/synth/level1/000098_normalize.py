"""Synthetic problem (kagent synth, seed 0, candidate 98)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
CHANNELS = 16
LENGTH = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 256}


class Model(nn.Module):
    """normalize (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return []
