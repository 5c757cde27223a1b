"""Synthetic problem (kagent synth, seed 0, candidate 466)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 64
HEIGHT = 128
WIDTH = 128
PAIRWISE_DISTANCE_P = 2.0
DIST_P = 2.0
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """pairwise_distance -> log_softmax (dim 1) -> dist."""

    def __init__(self, pairwise_distance_p, dist_p):
        super().__init__()
        self.pairwise_distance_p = pairwise_distance_p
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = F.pairwise_distance(x, y, p=self.pairwise_distance_p)
        h = torch.log_softmax(h, dim=1)
        return torch.dist(h, y_2, p=self.dist_p)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y_2 = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT)
    return [x, y, y_2]


def get_init_inputs():
    return [PAIRWISE_DISTANCE_P, DIST_P]
