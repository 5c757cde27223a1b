"""Synthetic problem (kagent synth, seed 0, candidate 9)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """PReLU -> + (residual) -> maximum (residual)."""

    def __init__(self, features, dtype):
        super().__init__()
        self.slope = nn.Parameter(torch.randn(features, dtype=dtype).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.prelu(x, self.slope)
        h = h + x
        return torch.maximum(h, x)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, DTYPE]
