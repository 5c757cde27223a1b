"""Synthetic problem (kagent synth, seed 0, candidate 119)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 4096
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256, "OUT_FEATURES": 128}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> selu -> cummax (dim -1) -> atan2 (residual)."""

    def __init__(self, out_features, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, self.weight, self.bias)
        h = torch.cat([h, x], dim=1)
        h3 = torch.selu(h)
        h = torch.cummax(h3, dim=-1)[0]
        return torch.atan2(h, h3)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
