"""Synthetic problem (kagent synth, seed 0, candidate 181)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
OUT_FEATURES = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 512, "OUT_FEATURES": 128}


class Model(nn.Module):
    """cummax (dim -1) -> linear (FEATURES -> OUT_FEATURES) -> log_softmax (dim -1)."""

    def __init__(self, out_features, features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features, dtype=dtype) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummax(x, dim=-1)[0]
        h = F.linear(h, self.weight, self.bias)
        return torch.log_softmax(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES, DTYPE]
