"""Synthetic problem (kagent synth, seed 0, candidate 301)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
UPSCALE_FACTOR = 2
LRN_SIZE = 3
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """pixel shuffle x2 -> heaviside -> concat (dim 1) -> softmin (dim 1) -> LocalResponseNorm."""

    def __init__(self, upscale_factor, channels, lrn_size):
        super().__init__()
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor=upscale_factor)
        self.scale = nn.Parameter(torch.randn(channels // upscale_factor ** 2, 1, 1))
        self.local_response_norm = nn.LocalResponseNorm(lrn_size)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.pixel_shuffle(x)
        h = torch.heaviside(h, self.scale)
        h = torch.cat([h, y], dim=1)
        h = F.softmin(h, dim=1)
        return self.local_response_norm(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS // UPSCALE_FACTOR ** 2, UPSCALE_FACTOR * HEIGHT, UPSCALE_FACTOR * WIDTH)
    return [x, y]


def get_init_inputs():
    return [UPSCALE_FACTOR, CHANNELS, LRN_SIZE]
