"""Synthetic problem (kagent synth, seed 0, candidate 341)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 1024
WIDTH = 1024
OUT_FEATURES = 8192
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64, "OUT_FEATURES": 128}


class Model(nn.Module):
    """sum over dim 2 -> Linear (WIDTH -> OUT_FEATURES)."""

    def __init__(self, width, out_features, dtype):
        super().__init__()
        self.linear = nn.Linear(width, out_features, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sum(x, dim=2)
        return self.linear(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [WIDTH, OUT_FEATURES, DTYPE]
