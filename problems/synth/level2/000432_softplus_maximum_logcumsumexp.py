"""Synthetic problem (kagent synth, seed 0, candidate 432)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """Softplus -> maximum (residual) -> logcumsumexp (dim 1)."""

    def __init__(self):
        super().__init__()
        self.softplus = nn.Softplus()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softplus(x)
        h = torch.maximum(h, x)
        return torch.logcumsumexp(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
