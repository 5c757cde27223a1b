"""Synthetic problem (kagent synth, seed 0, candidate 139)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 512
WIDTH = 512
OUT_FEATURES = 2048
PAIRWISEDISTANCE_P = 1.0
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32, "OUT_FEATURES": 128}


class Model(nn.Module):
    """PairwiseDistance -> linear (HEIGHT -> OUT_FEATURES) -> concat (dim -1)."""

    def __init__(self, pairwisedistance_p, out_features, height):
        super().__init__()
        self.pairwise_distance = nn.PairwiseDistance(p=pairwisedistance_p)
        self.weight = nn.Parameter(torch.randn(out_features, height) / math.sqrt(height))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = self.pairwise_distance(x, y)
        h = F.linear(h1, self.weight)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [PAIRWISEDISTANCE_P, OUT_FEATURES, HEIGHT]
