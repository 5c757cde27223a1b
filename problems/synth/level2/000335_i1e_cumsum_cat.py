"""Synthetic problem (kagent synth, seed 0, candidate 335)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
SMALL_SIZES = {"BATCH": 128, "FEATURES": 512}


class Model(nn.Module):
    """i1e -> cumsum (dim -1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.special.i1e(x)
        h = torch.cumsum(h1, dim=-1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
