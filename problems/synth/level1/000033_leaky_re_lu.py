"""Synthetic problem (kagent synth, seed 0, candidate 33)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
DEPTH = 128
HEIGHT = 64
WIDTH = 128
NEGATIVE_SLOPE = 0.05
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """LeakyReLU."""

    def __init__(self, negative_slope):
        super().__init__()
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.leaky_re_lu(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
