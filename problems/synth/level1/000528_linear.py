"""Synthetic problem (kagent synth, seed 0, candidate 528)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
OUT_FEATURES = 4096
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 512, "OUT_FEATURES": 256}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES)."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.linear = nn.Linear(features, out_features, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
