"""Synthetic problem (kagent synth, seed 0, candidate 182)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 4096
EPS = 1e-05
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """RMSNorm -> layer_norm."""

    def __init__(self, length, eps, dtype):
        super().__init__()
        self.rms_norm = nn.RMSNorm(length, eps=eps, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rms_norm(x)
        return F.layer_norm(h, h.shape[-1:])


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [LENGTH, EPS, DTYPE]
