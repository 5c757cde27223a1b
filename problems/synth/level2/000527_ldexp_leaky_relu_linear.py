"""Synthetic problem (kagent synth, seed 0, candidate 527)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 256
FEATURES = 1024
OUT_FEATURES = 1024
NEGATIVE_SLOPE = 0.1
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 128, "OUT_FEATURES": 128}


class Model(nn.Module):
    """ldexp -> leaky_relu -> Linear (FEATURES -> OUT_FEATURES)."""

    def __init__(self, features, negative_slope, out_features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.negative_slope = negative_slope
        self.linear = nn.Linear(features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.ldexp(x, self.scale)
        h = F.leaky_relu(h, negative_slope=self.negative_slope)
        return self.linear(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, NEGATIVE_SLOPE, OUT_FEATURES]
