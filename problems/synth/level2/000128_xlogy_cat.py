"""Synthetic problem (kagent synth, seed 0, candidate 128)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 16, "LENGTH": 1024}


class Model(nn.Module):
    """xlogy -> concat (dim 1)."""

    def __init__(self, channels, dtype):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, dtype=dtype).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.xlogy(x, self.scale)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, DTYPE]
