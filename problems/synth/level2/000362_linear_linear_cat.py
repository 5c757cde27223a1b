"""Synthetic problem (kagent synth, seed 0, candidate 362)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 512
OUT_FEATURES = 512
OUT_FEATURES_2 = 1024
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 64, "OUT_FEATURES": 64, "OUT_FEATURES_2": 128}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> linear (OUT_FEATURES -> OUT_FEATURES_2) -> concat (dim -1) -> flatten."""

    def __init__(self, features, out_features, out_features_2):
        super().__init__()
        self.linear = nn.Linear(features, out_features)
        self.weight = nn.Parameter(torch.randn(out_features_2, out_features) / math.sqrt(out_features))
        self.bias = nn.Parameter(torch.randn(out_features_2))
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        h = F.linear(h, self.weight, self.bias)
        h = torch.cat([h, x], dim=-1)
        return self.flatten(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2]
