"""Synthetic problem (kagent synth, seed 0, candidate 36)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
HEIGHT = 1024
WIDTH = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """asinh -> ReLU6 -> cumsum (dim 1) -> cummax (dim 2)."""

    def __init__(self):
        super().__init__()
        self.re_lu6 = nn.ReLU6()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.asinh(x)
        h = self.re_lu6(h)
        h = torch.cumsum(h, dim=1)
        return torch.cummax(h, dim=2)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
