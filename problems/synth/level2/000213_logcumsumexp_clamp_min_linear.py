"""Synthetic problem (kagent synth, seed 0, candidate 213)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 2048
OUT_FEATURES = 1024
OUT_FEATURES_2 = 1024
EPS = 1e-06
SMALL_SIZES = {"BATCH": 512, "FEATURES": 512, "OUT_FEATURES": 256, "OUT_FEATURES_2": 256}


class Model(nn.Module):
    """logcumsumexp (dim -1) -> clamp_min -> Linear (FEATURES -> OUT_FEATURES) -> RMSNorm -> linear (OUT_FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, features, out_features, eps, out_features_2):
        super().__init__()
        self.linear = nn.Linear(features, out_features, bias=False)
        self.rms_norm = nn.RMSNorm(out_features, eps=eps)
        self.weight = nn.Parameter(torch.randn(out_features_2, out_features) / math.sqrt(out_features))
        self.bias = nn.Parameter(torch.randn(out_features_2))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.logcumsumexp(x, dim=-1)
        h = torch.clamp_min(h, y)
        h = self.linear(h)
        h = self.rms_norm(h)
        return F.linear(h, self.weight, self.bias)


def get_inputs():
    x = torch.rand(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, EPS, OUT_FEATURES_2]
