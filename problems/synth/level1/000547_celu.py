"""Synthetic problem (kagent synth, seed 0, candidate 547)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
CHANNELS = 32
LENGTH = 16384
ALPHA = 2.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """celu."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.celu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [ALPHA]
