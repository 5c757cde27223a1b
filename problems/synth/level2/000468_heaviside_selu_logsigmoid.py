"""Synthetic problem (kagent synth, seed 0, candidate 468)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
LENGTH = 8192
SMALL_SIZES = {"BATCH": 16, "LENGTH": 1024}


class Model(nn.Module):
    """heaviside -> selu -> logsigmoid -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.heaviside(x, y)
        h = torch.selu(h1)
        h = F.logsigmoid(h)
        h = torch.cat([h, h1], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x, y]


def get_init_inputs():
    return []
