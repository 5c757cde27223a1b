"""Synthetic problem (kagent synth, seed 0, candidate 515)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 16384
OUT_FEATURES = 4096
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 16, "LENGTH": 1024, "OUT_FEATURES": 512}


class Model(nn.Module):
    """mean over dim 2 -> Linear (CHANNELS -> OUT_FEATURES) -> concat (dim 1) -> true_divide -> cummin (dim -1)."""

    def __init__(self, channels, out_features):
        super().__init__()
        self.linear = nn.Linear(channels, out_features, bias=False)
        self.scale = nn.Parameter(torch.randn(out_features + channels).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.mean(x, dim=2)
        h = self.linear(h1)
        h = torch.cat([h, h1], dim=1)
        h = torch.true_divide(h, self.scale)
        return torch.cummin(h, dim=-1)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, OUT_FEATURES]
