"""Synthetic problem (kagent synth, seed 0, candidate 131)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
FEATURES = 4096
OUT_FEATURES = 4096
OUT_FEATURES_2 = 512
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES": 512, "OUT_FEATURES_2": 128}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> tensordot (OUT_FEATURES + FEATURES -> OUT_FEATURES_2) -> concat (dim 1)."""

    def __init__(self, out_features, features, out_features_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features))
        self.weight_2 = nn.Parameter(torch.randn(out_features + features, out_features_2) / math.sqrt(out_features + features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.linear(x, self.weight, self.bias)
        h = torch.cat([h1, x], dim=1)
        h = torch.tensordot(h, self.weight_2, dims=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES, OUT_FEATURES_2]
