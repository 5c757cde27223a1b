"""Synthetic problem (kagent synth, seed 0, candidate 14)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 256
WIDTH = 512
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, y], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return []
