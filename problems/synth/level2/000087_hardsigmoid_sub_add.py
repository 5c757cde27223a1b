"""Synthetic problem (kagent synth, seed 0, candidate 87)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 8192
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 512}


class Model(nn.Module):
    """hardsigmoid -> - (residual) -> +."""

    def __init__(self, features, dtype):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.hardsigmoid(x)
        h = h - x
        return h + self.bias


def get_inputs():
    return [torch.rand(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, DTYPE]
