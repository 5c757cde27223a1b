"""Synthetic problem (kagent synth, seed 0, candidate 390)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
OUT_FEATURES = 4096
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 512, "OUT_FEATURES": 512}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tensordot(x, self.weight, dims=1)
        h2 = torch.cat([h, x], dim=1)
        h = torch.cat([h2, x], dim=1)
        return torch.cat([h, h2], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
