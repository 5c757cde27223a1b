"""Synthetic problem (kagent synth, seed 0, candidate 278)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """Conv3d 1x1x1 -> - (residual) -> concat (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, channels, kernel_size, dtype):
        super().__init__()
        self.conv3d = nn.Conv3d(channels, channels, kernel_size, groups=channels, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.conv3d(x)
        h = h1 - x
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, h1], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, DTYPE]
