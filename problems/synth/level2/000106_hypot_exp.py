"""Synthetic problem (kagent synth, seed 0, candidate 106)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
DEPTH = 256
HEIGHT = 64
WIDTH = 64
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 8}


class Model(nn.Module):
    """hypot -> exp."""

    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.hypot(x, self.scale)
        return torch.exp(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
