"""Synthetic problem (kagent synth, seed 0, candidate 204)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 16384
NEGATIVE_SLOPE = 0.2
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 512}


class Model(nn.Module):
    """cos -> concat (dim 1) -> LeakyReLU -> maximum (residual)."""

    def __init__(self, negative_slope):
        super().__init__()
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cos(x)
        h2 = torch.cat([h, x], dim=1)
        h = self.leaky_re_lu(h2)
        return torch.maximum(h, h2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
