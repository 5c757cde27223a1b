"""Synthetic problem (kagent synth, seed 0, candidate 51)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
OUT_FEATURES = 2048
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024, "OUT_FEATURES": 128}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES)."""

    def __init__(self, out_features, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
