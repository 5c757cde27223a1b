"""Synthetic problem (kagent synth, seed 0, candidate 485)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
DEPTH = 128
HEIGHT = 128
WIDTH = 64
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """sum over dim 4 -> flip (dim 1) -> logcumsumexp (dim 2) -> * (residual) -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.sum(x, dim=4)
        h = torch.flip(h1, dims=[1])
        h = torch.logcumsumexp(h, dim=2)
        h = h * h1
        return h + h1


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
