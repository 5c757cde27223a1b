"""Synthetic problem (kagent synth, seed 0, candidate 109)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256}


class Model(nn.Module):
    """Softmin (dim -1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()
        self.softmin = nn.Softmin(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softmin(x)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return []
