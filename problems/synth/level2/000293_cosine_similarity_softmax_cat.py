"""Synthetic problem (kagent synth, seed 0, candidate 293)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
DEPTH = 32
HEIGHT = 32
WIDTH = 32
NEGATIVE_SLOPE = 0.1
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 8}


class Model(nn.Module):
    """cosine_similarity -> Softmax (dim -1) -> concat (dim 1) -> leaky_relu -> median over dim 2."""

    def __init__(self, negative_slope):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = F.cosine_similarity(x, y, dim=1)
        h = self.softmax(h1)
        h = torch.cat([h, h1], dim=1)
        h = F.leaky_relu(h, negative_slope=self.negative_slope)
        return torch.median(h, dim=2)[0]


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
