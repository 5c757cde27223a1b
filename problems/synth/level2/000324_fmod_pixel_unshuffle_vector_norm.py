"""Synthetic problem (kagent synth, seed 0, candidate 324)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 128
WIDTH = 256
DOWNSCALE_FACTOR = 2
ORD = 2
EPS = 1e-05
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """fmod -> pixel unshuffle x2 -> vector_norm over dim 3 -> RMSNorm -> maximum (residual)."""

    def __init__(self, downscale_factor, ord, height, eps):
        super().__init__()
        self.pixel_unshuffle = nn.PixelUnshuffle(downscale_factor=downscale_factor)
        self.ord = ord
        self.rms_norm = nn.RMSNorm(height // downscale_factor, eps=eps)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.fmod(x, y)
        h = self.pixel_unshuffle(h)
        h3 = torch.linalg.vector_norm(h, dim=3, ord=self.ord)
        h = self.rms_norm(h3)
        return torch.maximum(h, h3)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).exp()
    return [x, y]


def get_init_inputs():
    return [DOWNSCALE_FACTOR, ORD, HEIGHT, EPS]
