"""Synthetic problem (kagent synth, seed 0, candidate 103)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 4096
OUT_FEATURES = 512
SMALL_SIZES = {"BATCH": 256, "FEATURES": 512, "OUT_FEATURES": 64}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> clamp_min."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.scale = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tensordot(x, self.weight, dims=1)
        return torch.clamp_min(h, self.scale)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
