"""Synthetic problem (kagent synth, seed 0, candidate 550)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 256
WIDTH = 128
LAMBD = 0.5
SCALE_FACTOR = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """softshrink -> + (residual) -> cumprod (dim 1) -> upsample x2 nearest -> ldexp."""

    def __init__(self, lambd, scale_factor):
        super().__init__()
        self.lambd = lambd
        self.upsampling_nearest2d = nn.UpsamplingNearest2d(scale_factor=scale_factor)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.softshrink(x, lambd=self.lambd)
        h = h + x
        h = torch.cumprod(h, dim=1)
        h = self.upsampling_nearest2d(h)
        return torch.ldexp(h, y)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, SCALE_FACTOR * HEIGHT, SCALE_FACTOR * WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [LAMBD, SCALE_FACTOR]
