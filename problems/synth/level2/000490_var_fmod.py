"""Synthetic problem (kagent synth, seed 0, candidate 490)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
DEPTH = 128
HEIGHT = 128
WIDTH = 128
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """var over dim [2, 3, 4] -> fmod."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.var(x, dim=[2, 3, 4])
        return torch.fmod(h, y)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, dtype=DTYPE).exp()
    return [x, y]


def get_init_inputs():
    return []
