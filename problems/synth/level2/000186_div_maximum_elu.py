"""Synthetic problem (kagent synth, seed 0, candidate 186)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 512
WIDTH = 256
DIVISOR = 8.0
ALPHA = 0.5
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """/ -> maximum (residual) -> elu -> clamp_max (residual) -> cummax (dim 1)."""

    def __init__(self, divisor, alpha):
        super().__init__()
        self.divisor = divisor
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x / self.divisor
        h2 = torch.maximum(h, x)
        h = F.elu(h2, alpha=self.alpha)
        h = torch.clamp_max(h, h2)
        return torch.cummax(h, dim=1)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [DIVISOR, ALPHA]
