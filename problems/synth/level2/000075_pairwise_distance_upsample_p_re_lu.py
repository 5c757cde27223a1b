"""Synthetic problem (kagent synth, seed 0, candidate 75)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 32
WIDTH = 64
PAIRWISEDISTANCE_P = 1.0
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 2, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """PairwiseDistance -> upsample x2 bilinear -> PReLU."""

    def __init__(self, pairwisedistance_p, scale_factor, channels):
        super().__init__()
        self.pairwise_distance = nn.PairwiseDistance(p=pairwisedistance_p)
        self.upsample = nn.Upsample(scale_factor=scale_factor, mode='bilinear')
        self.p_re_lu = nn.PReLU(num_parameters=channels)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.pairwise_distance(x, y)
        h = self.upsample(h)
        return self.p_re_lu(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [PAIRWISEDISTANCE_P, SCALE_FACTOR, CHANNELS]
