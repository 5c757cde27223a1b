"""Synthetic problem (kagent synth, seed 0, candidate 396)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
PAIRWISE_DISTANCE_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """upsample x2 bilinear -> logsumexp over dim 1 -> pairwise_distance."""

    def __init__(self, scale_factor, pairwise_distance_p):
        super().__init__()
        self.scale_factor = scale_factor
        self.pairwise_distance_p = pairwise_distance_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.interpolate(x, scale_factor=self.scale_factor, mode='bilinear', align_corners=True)
        h = torch.logsumexp(h, dim=1)
        return F.pairwise_distance(h, y, p=self.pairwise_distance_p)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, SCALE_FACTOR * HEIGHT, SCALE_FACTOR * WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [SCALE_FACTOR, PAIRWISE_DISTANCE_P]
