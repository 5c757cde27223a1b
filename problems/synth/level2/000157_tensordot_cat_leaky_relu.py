"""Synthetic problem (kagent synth, seed 0, candidate 157)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 512
OUT_FEATURES = 2048
NEGATIVE_SLOPE = 0.2
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> concat (dim -1) -> leaky_relu."""

    def __init__(self, features, out_features, negative_slope):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tensordot(x, self.weight, dims=1)
        h = torch.cat([h, x], dim=-1)
        return F.leaky_relu(h, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, NEGATIVE_SLOPE]
