"""Synthetic problem (kagent synth, seed 0, candidate 195)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 8
LENGTH = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 512}


class Model(nn.Module):
    """concat (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, y], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
