"""Synthetic problem (kagent synth, seed 0, candidate 232)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 8192
OUT_FEATURES = 4096
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES": 256}


class Model(nn.Module):
    """addmm (FEATURES -> OUT_FEATURES)."""

    def __init__(self, out_features, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(out_features))
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
