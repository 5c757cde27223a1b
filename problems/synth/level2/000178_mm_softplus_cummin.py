"""Synthetic problem (kagent synth, seed 0, candidate 178)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 4096
OUT_FEATURES = 1024
BETA = 1.0
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256, "OUT_FEATURES": 64}


class Model(nn.Module):
    """mm (FEATURES -> OUT_FEATURES) -> softplus -> cummin (dim -1)."""

    def __init__(self, features, out_features, beta):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)
        h = F.softplus(h, beta=self.beta)
        return torch.cummin(h, dim=-1)[0]


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, BETA]
