"""Synthetic problem (kagent synth, seed 0, candidate 80)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 64
WIDTH = 128
OUT_CHANNELS = 8
OUT_FEATURES = 2048
KERNEL_SIZE = 7
PADDING = 3
PAIRWISE_DISTANCE_P = 1.0
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32, "OUT_FEATURES": 512}


class Model(nn.Module):
    """Conv2d 7x7 -> pairwise_distance -> linear (HEIGHT -> OUT_FEATURES) -> concat (dim -1)."""

    def __init__(self, channels, out_channels, kernel_size, padding, pairwise_distance_p, out_features, height):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding, padding_mode='circular')
        self.pairwise_distance_p = pairwise_distance_p
        self.weight = nn.Parameter(torch.randn(out_features, height) / math.sqrt(height))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.conv2d(x)
        h2 = F.pairwise_distance(h, y, p=self.pairwise_distance_p)
        h = F.linear(h2, self.weight)
        return torch.cat([h, h2], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, OUT_CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, PAIRWISE_DISTANCE_P, OUT_FEATURES, HEIGHT]
