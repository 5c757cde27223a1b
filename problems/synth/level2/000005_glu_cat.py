"""Synthetic problem (kagent synth, seed 0, candidate 5)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 256
WIDTH = 512
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """GLU (dim 1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()
        self.glu = nn.GLU(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.glu(x)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
