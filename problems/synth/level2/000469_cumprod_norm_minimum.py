"""Synthetic problem (kagent synth, seed 0, candidate 469)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 1024
WIDTH = 1024
NORM_P = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """cumprod (dim 1) -> norm over dim 1 -> minimum."""

    def __init__(self, norm_p):
        super().__init__()
        self.norm_p = norm_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cumprod(x, dim=1)
        h = torch.norm(h, dim=1, p=self.norm_p)
        return torch.minimum(h, y)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).exp()
    y = torch.randn(BATCH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [NORM_P]
