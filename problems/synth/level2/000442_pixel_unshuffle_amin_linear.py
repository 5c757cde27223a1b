"""Synthetic problem (kagent synth, seed 0, candidate 442)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
OUT_FEATURES = 4096
DOWNSCALE_FACTOR = 2
BETA = 2.0
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64, "OUT_FEATURES": 512}


class Model(nn.Module):
    """pixel unshuffle x2 -> amin over dim 1 -> Linear (WIDTH // DOWNSCALE_FACTOR -> OUT_FEATURES) -> Softplus -> concat (dim -1)."""

    def __init__(self, downscale_factor, width, out_features, beta):
        super().__init__()
        self.pixel_unshuffle = nn.PixelUnshuffle(downscale_factor=downscale_factor)
        self.linear = nn.Linear(width // downscale_factor, out_features)
        self.softplus = nn.Softplus(beta=beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pixel_unshuffle(x)
        h2 = torch.amin(h, dim=1)
        h = self.linear(h2)
        h = self.softplus(h)
        return torch.cat([h, h2], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [DOWNSCALE_FACTOR, WIDTH, OUT_FEATURES, BETA]
