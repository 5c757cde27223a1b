"""Synthetic problem (kagent synth, seed 0, candidate 38)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
EPS = 1e-06
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """RMSNorm -> expm1."""

    def __init__(self, width, eps, dtype):
        super().__init__()
        self.rms_norm = nn.RMSNorm(width, eps=eps, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rms_norm(x)
        return torch.expm1(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [WIDTH, EPS, DTYPE]
