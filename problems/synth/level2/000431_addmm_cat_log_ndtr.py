"""Synthetic problem (kagent synth, seed 0, candidate 431)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 1024
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """addmm (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> log_ndtr."""

    def __init__(self, out_features, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(out_features))
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.addmm(self.bias, x, self.weight)
        h = torch.cat([h, x], dim=1)
        return torch.special.log_ndtr(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
