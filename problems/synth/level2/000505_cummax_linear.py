"""Synthetic problem (kagent synth, seed 0, candidate 505)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 4096
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024, "OUT_FEATURES": 256}


class Model(nn.Module):
    """cummax (dim -1) -> Linear (FEATURES -> OUT_FEATURES)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummax(x, dim=-1)[0]
        return self.linear(h)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
