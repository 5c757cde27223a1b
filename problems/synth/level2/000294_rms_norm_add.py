"""Synthetic problem (kagent synth, seed 0, candidate 294)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 64
HEIGHT = 128
WIDTH = 64
EPS = 1e-05
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """RMSNorm -> + (residual)."""

    def __init__(self, width, eps):
        super().__init__()
        self.rms_norm = nn.RMSNorm(width, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rms_norm(x)
        return h + x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [WIDTH, EPS]
