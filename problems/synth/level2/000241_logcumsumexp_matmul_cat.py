"""Synthetic problem (kagent synth, seed 0, candidate 241)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 4096
OUT_FEATURES = 512
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024, "OUT_FEATURES": 128}


class Model(nn.Module):
    """logcumsumexp (dim -1) -> matmul (FEATURES -> OUT_FEATURES) -> concat (dim 1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.logcumsumexp(x, dim=-1)
        h = torch.matmul(h, self.weight)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
