"""Synthetic problem (kagent synth, seed 0, candidate 423)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 128
WIDTH = 64
EPS = 1e-05
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """RMSNorm -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, width, eps):
        super().__init__()
        self.rms_norm = nn.RMSNorm(width, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.rms_norm(x)
        h = torch.cat([h1, x], dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).exp()]


def get_init_inputs():
    return [WIDTH, EPS]
