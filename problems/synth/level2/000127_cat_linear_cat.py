"""Synthetic problem (kagent synth, seed 0, candidate 127)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 2048
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """concat (dim 1) -> Linear (2 * FEATURES -> OUT_FEATURES) -> concat (dim 1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(2 * features, out_features)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.linear(h)
        return torch.cat([h, x], dim=1)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
