"""Synthetic problem (kagent synth, seed 0, candidate 344)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """layer_norm -> * (residual)."""

    def __init__(self, width):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.layer_norm(x, x.shape[-1:], self.norm_weight)
        return h * x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [WIDTH]
