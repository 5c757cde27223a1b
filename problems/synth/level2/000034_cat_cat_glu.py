"""Synthetic problem (kagent synth, seed 0, candidate 34)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """concat (dim 1) -> concat (dim 1) -> GLU (dim 1) -> cumsum (dim 2) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.cat([x, y], dim=1)
        h = torch.cat([h1, x], dim=1)
        h = F.glu(h, dim=1)
        h = torch.cumsum(h, dim=2)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
