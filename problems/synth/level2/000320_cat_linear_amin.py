"""Synthetic problem (kagent synth, seed 0, candidate 320)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
OUT_FEATURES = 512
LAMBD = 0.25
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024, "OUT_FEATURES": 64}


class Model(nn.Module):
    """concat (dim 1) -> Linear (2 * FEATURES -> OUT_FEATURES) -> amin over dim 1 -> hardshrink."""

    def __init__(self, features, out_features, lambd):
        super().__init__()
        self.linear = nn.Linear(2 * features, out_features, bias=False)
        self.lambd = lambd

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.linear(h)
        h = torch.amin(h, dim=1)
        return F.hardshrink(h, lambd=self.lambd)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, LAMBD]
