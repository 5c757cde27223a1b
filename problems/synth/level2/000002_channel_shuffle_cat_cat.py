"""Synthetic problem (kagent synth, seed 0, candidate 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
GROUPS = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """channel shuffle -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.channel_shuffle(x, groups=self.groups)
        h = torch.cat([h1, x], dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [GROUPS]
