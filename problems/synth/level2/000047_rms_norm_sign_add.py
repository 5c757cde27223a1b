"""Synthetic problem (kagent synth, seed 0, candidate 47)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 16
LENGTH = 16384
EPS = 1e-05
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 512}


class Model(nn.Module):
    """RMSNorm -> sign -> + (residual)."""

    def __init__(self, length, eps, dtype):
        super().__init__()
        self.rms_norm = nn.RMSNorm(length, eps=eps, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rms_norm(x)
        h = torch.sign(h)
        return h + x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [LENGTH, EPS, DTYPE]
