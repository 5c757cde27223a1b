"""Synthetic problem (kagent synth, seed 0, candidate 73)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
SCALE_FACTOR = 2
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """cummax (dim -1) -> upsample x2 nearest-exact -> cosh -> concat (dim 1) -> Softplus."""

    def __init__(self, scale_factor):
        super().__init__()
        self.scale_factor = scale_factor
        self.softplus = nn.Softplus()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummax(x, dim=-1)[0]
        h2 = F.interpolate(h, scale_factor=self.scale_factor, mode='nearest-exact')
        h = torch.cosh(h2)
        h = torch.cat([h, h2], dim=1)
        return self.softplus(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [SCALE_FACTOR]
