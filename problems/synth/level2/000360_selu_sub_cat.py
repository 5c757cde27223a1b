"""Synthetic problem (kagent synth, seed 0, candidate 360)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
SMALL_SIZES = {"BATCH": 128, "FEATURES": 512}


class Model(nn.Module):
    """selu -> - (residual) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.selu(x)
        h2 = h - x
        h = torch.cat([h2, x], dim=1)
        return torch.cat([h, h2], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return []
