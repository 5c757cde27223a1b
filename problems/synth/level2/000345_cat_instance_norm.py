"""Synthetic problem (kagent synth, seed 0, candidate 345)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 64
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """concat (dim 1) -> instance_norm."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        return F.instance_norm(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return []
