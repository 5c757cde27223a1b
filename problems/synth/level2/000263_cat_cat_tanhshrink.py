"""Synthetic problem (kagent synth, seed 0, candidate 263)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
ALPHA = 1.5
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """concat (dim 1) -> concat (dim 1) -> tanhshrink -> softmin (dim 1) -> ELU."""

    def __init__(self, alpha):
        super().__init__()
        self.elu = nn.ELU(alpha=alpha)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.cat([h, y], dim=1)
        h = F.tanhshrink(h)
        h = F.softmin(h, dim=1)
        return self.elu(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [ALPHA]
