"""Synthetic problem (kagent synth, seed 0, candidate 336)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
OUT_FEATURES = 2048
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024, "OUT_FEATURES": 256}


class Model(nn.Module):
    """addmm (FEATURES -> OUT_FEATURES)."""

    def __init__(self, out_features, dtype, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_FEATURES, DTYPE, FEATURES]
