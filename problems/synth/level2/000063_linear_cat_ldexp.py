"""Synthetic problem (kagent synth, seed 0, candidate 63)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 256
FEATURES = 512
OUT_FEATURES = 1024
OUT_FEATURES_2 = 512
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 128, "OUT_FEATURES": 256, "OUT_FEATURES_2": 128}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> concat (dim -1) -> ldexp -> tensordot (OUT_FEATURES + FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, features, out_features, out_features_2):
        super().__init__()
        self.linear = nn.Linear(features, out_features, bias=False)
        self.weight = nn.Parameter(torch.randn(out_features + features, out_features_2) / math.sqrt(out_features + features))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        h = torch.cat([h, x], dim=-1)
        h = torch.ldexp(h, y)
        return torch.tensordot(h, self.weight, dims=1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, OUT_FEATURES + FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2]
