"""Synthetic problem (kagent synth, seed 0, candidate 548)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 4096
OUT_FEATURES = 4096
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256, "OUT_FEATURES": 256}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> GLU (dim 1) -> concat (dim 1) -> hypot."""

    def __init__(self, out_features, features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features, dtype=dtype) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))
        self.glu = nn.GLU(dim=1)
        self.scale = nn.Parameter(torch.randn(out_features // 2 + features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, self.weight, self.bias)
        h = self.glu(h)
        h = torch.cat([h, x], dim=1)
        return torch.hypot(h, self.scale)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES, DTYPE]
