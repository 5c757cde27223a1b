"""Synthetic problem (kagent synth, seed 0, candidate 160)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 32
LENGTH = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """layer_norm."""

    def __init__(self, length, dtype):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(length, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], self.norm_weight)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [LENGTH, DTYPE]
