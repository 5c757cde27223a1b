"""Synthetic problem (kagent synth, seed 0, candidate 296)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 16384
OUT_FEATURES = 1024
OUT_FEATURES_2 = 1024
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES": 64, "OUT_FEATURES_2": 64}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> Linear (OUT_FEATURES -> OUT_FEATURES_2) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, features, out_features, out_features_2):
        super().__init__()
        self.linear = nn.Linear(features, out_features, bias=False)
        self.linear_2 = nn.Linear(out_features, out_features_2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        h = self.linear_2(h)
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2]
