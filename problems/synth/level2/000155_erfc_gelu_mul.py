"""Synthetic problem (kagent synth, seed 0, candidate 155)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 16384
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024}


class Model(nn.Module):
    """erfc -> GELU -> * (residual)."""

    def __init__(self):
        super().__init__()
        self.gelu = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.erfc(x)
        h = self.gelu(h1)
        return h * h1


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
