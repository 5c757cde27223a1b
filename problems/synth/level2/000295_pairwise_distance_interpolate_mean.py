"""Synthetic problem (kagent synth, seed 0, candidate 295)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 64
HEIGHT = 64
WIDTH = 32
PAIRWISE_DISTANCE_P = 1.0
SCALE_FACTOR = 2
SHIFT = 1
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """pairwise_distance -> upsample x2 bilinear -> mean over dim [2, 3] -> roll (dim 1)."""

    def __init__(self, pairwise_distance_p, scale_factor, shift):
        super().__init__()
        self.pairwise_distance_p = pairwise_distance_p
        self.scale_factor = scale_factor
        self.shift = shift

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.pairwise_distance(x, y, p=self.pairwise_distance_p)
        h = F.interpolate(h, scale_factor=self.scale_factor, mode='bilinear')
        h = torch.mean(h, dim=[2, 3], keepdim=True)
        return torch.roll(h, shifts=self.shift, dims=1)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [PAIRWISE_DISTANCE_P, SCALE_FACTOR, SHIFT]
