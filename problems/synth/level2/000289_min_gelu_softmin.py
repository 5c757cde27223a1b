"""Synthetic problem (kagent synth, seed 0, candidate 289)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """min over dim 1 -> gelu -> softmin (dim 0) -> copysign (residual) -> * (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.min(x, dim=1, keepdim=True)[0]
        h2 = F.gelu(h1, approximate='tanh')
        h = F.softmin(h2, dim=0)
        h = torch.copysign(h, h2)
        return h * h1


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
