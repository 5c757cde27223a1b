"""Synthetic problem (kagent synth, seed 0, candidate 426)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
OUT_FEATURES = 2048
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES": 128}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> LeakyReLU."""

    def __init__(self, out_features, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.leaky_re_lu = nn.LeakyReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, self.weight)
        return self.leaky_re_lu(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
