"""Synthetic problem (kagent synth, seed 0, candidate 116)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
DIST_P = 2.0
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """min over dim 1 -> clamp_max -> dist."""

    def __init__(self, dist_p):
        super().__init__()
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = torch.min(x, dim=1, keepdim=True)[0]
        h = torch.clamp_max(h, y)
        return torch.dist(h, y_2, p=self.dist_p)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, 1, HEIGHT, WIDTH)
    y_2 = torch.randn(BATCH, 1, HEIGHT, WIDTH)
    return [x, y, y_2]


def get_init_inputs():
    return [DIST_P]
