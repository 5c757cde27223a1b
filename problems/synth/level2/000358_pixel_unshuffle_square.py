"""Synthetic problem (kagent synth, seed 0, candidate 358)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 1024
WIDTH = 512
DOWNSCALE_FACTOR = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """pixel unshuffle x2 -> square."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.pixel_unshuffle = nn.PixelUnshuffle(downscale_factor=downscale_factor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pixel_unshuffle(x)
        return torch.square(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [DOWNSCALE_FACTOR]
