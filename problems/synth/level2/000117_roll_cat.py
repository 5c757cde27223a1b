"""Synthetic problem (kagent synth, seed 0, candidate 117)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
SHIFT = 3
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """roll (dim 2) -> concat (dim 1)."""

    def __init__(self, shift):
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.roll(x, shifts=self.shift, dims=2)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [SHIFT]
