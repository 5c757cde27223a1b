"""Synthetic problem (kagent synth, seed 0, candidate 497)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
FEATURES = 8192
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024, "OUT_FEATURES": 256}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> Tanhshrink -> + (residual) -> cumsum (dim -1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features)
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.linear(x)
        h = self.tanhshrink(h1)
        h = h + h1
        return torch.cumsum(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
