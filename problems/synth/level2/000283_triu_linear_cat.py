"""Synthetic problem (kagent synth, seed 0, candidate 283)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
OUT_FEATURES = 4096
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """triu -> Linear (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> flip (dim -1) -> + (residual)."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.linear = nn.Linear(features, out_features, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.triu(x)
        h = self.linear(h1)
        h3 = torch.cat([h, h1], dim=1)
        h = torch.flip(h3, dims=[-1])
        return h + h3


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
