"""Synthetic problem (kagent synth, seed 0, candidate 352)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 128
WIDTH = 128
OUT_FEATURES = 2048
EPS = 1e-06
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32, "OUT_FEATURES": 512}


class Model(nn.Module):
    """sum over dim 1 -> Linear (WIDTH -> OUT_FEATURES) -> concat (dim -1) -> RMSNorm."""

    def __init__(self, width, out_features, dtype, eps):
        super().__init__()
        self.linear = nn.Linear(width, out_features, dtype=dtype)
        self.rms_norm = nn.RMSNorm(out_features + width, eps=eps, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.sum(x, dim=1)
        h = self.linear(h1)
        h = torch.cat([h, h1], dim=-1)
        return self.rms_norm(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [WIDTH, OUT_FEATURES, DTYPE, EPS]
