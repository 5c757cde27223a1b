"""Synthetic problem (kagent synth, seed 0, candidate 152)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 4096
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 512, "FEATURES": 512, "OUT_FEATURES": 256}


class Model(nn.Module):
    """logaddexp -> softmax (dim -1) -> tensordot (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> selu."""

    def __init__(self, features, out_features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.logaddexp(x, self.scale)
        h = torch.softmax(h1, dim=-1)
        h = torch.tensordot(h, self.weight, dims=1)
        h = torch.cat([h, h1], dim=1)
        return torch.selu(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
