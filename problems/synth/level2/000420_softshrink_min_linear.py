"""Synthetic problem (kagent synth, seed 0, candidate 420)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
HEIGHT = 512
WIDTH = 256
OUT_FEATURES = 2048
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16, "OUT_FEATURES": 128}


class Model(nn.Module):
    """Softshrink -> min over dim 3 -> linear (HEIGHT -> OUT_FEATURES) -> expm1."""

    def __init__(self, out_features, height):
        super().__init__()
        self.softshrink = nn.Softshrink()
        self.weight = nn.Parameter(torch.randn(out_features, height) / math.sqrt(height))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softshrink(x)
        h = torch.min(h, dim=3)[0]
        h = F.linear(h, self.weight, self.bias)
        return torch.expm1(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUT_FEATURES, HEIGHT]
