"""Synthetic problem (kagent synth, seed 0, candidate 370)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 16384
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """transpose(1, 2) -> logcumsumexp (dim -1) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.transpose(x, 1, 2)
        h = torch.logcumsumexp(h1, dim=-1)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
