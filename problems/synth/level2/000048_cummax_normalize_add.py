"""Synthetic problem (kagent synth, seed 0, candidate 48)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256}


class Model(nn.Module):
    """cummax (dim -1) -> normalize (dim -1) -> + (residual) -> * (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.cummax(x, dim=-1)[0]
        h = F.normalize(h1, dim=-1)
        h = h + h1
        return h * x


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
