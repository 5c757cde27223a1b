"""Synthetic problem (kagent synth, seed 0, candidate 554)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 128
WIDTH = 128
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """concat (dim 1) -> rms_norm -> cummax (dim 2) -> - (residual) -> amin over dim 1."""

    def __init__(self, width):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.cat([x, y], dim=1)
        h = F.rms_norm(h1, h1.shape[-1:], self.norm_weight)
        h = torch.cummax(h, dim=2)[0]
        h = h - h1
        return torch.amin(h, dim=1, keepdim=True)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [WIDTH]
