"""Synthetic problem (kagent synth, seed 0, candidate 284)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 256
WIDTH = 512
DOWNSCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 64}


class Model(nn.Module):
    """pixel unshuffle x2 -> cummax (dim 1) -> batch_norm (training mode: batch statistics) -> maximum (residual)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.pixel_unshuffle(x, downscale_factor=self.downscale_factor)
        h2 = torch.cummax(h, dim=1)[0]
        h = F.batch_norm(h2, None, None, training=True)
        return torch.maximum(h, h2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [DOWNSCALE_FACTOR]
