"""Synthetic problem (kagent synth, seed 0, candidate 121)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
OUT_CHANNELS = 16
KERNEL_SIZE = 1
GROUPS = 8
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Conv2d 1x1 -> channel shuffle -> + (residual) -> + (residual)."""

    def __init__(self, channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, bias=False)
        self.groups = groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.conv2d(x)
        h2 = F.channel_shuffle(h1, groups=self.groups)
        h = h2 + h1
        return h + h2


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, GROUPS]
