"""Synthetic problem (kagent synth, seed 0, candidate 91)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """concat (dim 1) -> logsumexp over dim 1 -> CELU -> std over dim 1."""

    def __init__(self):
        super().__init__()
        self.celu = nn.CELU()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.logsumexp(h, dim=1)
        h = self.celu(h)
        return torch.std(h, dim=1, keepdim=True)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return []
