"""Synthetic problem (kagent synth, seed 0, candidate 530)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
OUT_FEATURES = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024, "OUT_FEATURES": 128}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES)."""

    def __init__(self, out_features, features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features, dtype=dtype) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES, DTYPE]
