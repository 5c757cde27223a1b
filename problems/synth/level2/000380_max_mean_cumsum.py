"""Synthetic problem (kagent synth, seed 0, candidate 380)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
CHANNELS = 32
LENGTH = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 16, "LENGTH": 1024}


class Model(nn.Module):
    """max over dim 2 -> mean over dim 1 -> cumsum (dim 0)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.max(x, dim=2)[0]
        h = torch.mean(h, dim=1, keepdim=True)
        return torch.cumsum(h, dim=0)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return []
