"""Synthetic problem (kagent synth, seed 0, candidate 275)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
OUT_FEATURES = 4096
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """silu -> Linear (FEATURES -> OUT_FEATURES) -> var over dim 1 -> cumsum (dim -1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(x)
        h = self.linear(h)
        h = torch.var(h, dim=1)
        return torch.cumsum(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
