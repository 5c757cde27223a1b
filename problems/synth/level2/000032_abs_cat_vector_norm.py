"""Synthetic problem (kagent synth, seed 0, candidate 32)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
OUT_FEATURES = 1024
ORD = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32, "OUT_FEATURES": 256}


class Model(nn.Module):
    """abs -> concat (dim 1) -> vector_norm over dim 1 -> linear (WIDTH -> OUT_FEATURES)."""

    def __init__(self, ord, out_features, width):
        super().__init__()
        self.ord = ord
        self.weight = nn.Parameter(torch.randn(out_features, width) / math.sqrt(width))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.abs(x)
        h = torch.cat([h, x], dim=1)
        h = torch.linalg.vector_norm(h, dim=1, ord=self.ord)
        return F.linear(h, self.weight, self.bias)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [ORD, OUT_FEATURES, WIDTH]
