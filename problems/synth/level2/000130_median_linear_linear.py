"""Synthetic problem (kagent synth, seed 0, candidate 130)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 1024
WIDTH = 1024
OUT_FEATURES = 8192
OUT_FEATURES_2 = 8192
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16, "OUT_FEATURES": 128, "OUT_FEATURES_2": 256}


class Model(nn.Module):
    """median over dim 3 -> linear (HEIGHT -> OUT_FEATURES) -> linear (OUT_FEATURES -> OUT_FEATURES_2) -> concat (dim -1)."""

    def __init__(self, out_features, height, out_features_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, height) / math.sqrt(height))
        self.bias = nn.Parameter(torch.randn(out_features))
        self.weight_2 = nn.Parameter(torch.randn(out_features_2, out_features) / math.sqrt(out_features))
        self.bias_2 = nn.Parameter(torch.randn(out_features_2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.median(x, dim=3)[0]
        h = F.linear(h1, self.weight, self.bias)
        h = F.linear(h, self.weight_2, self.bias_2)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUT_FEATURES, HEIGHT, OUT_FEATURES_2]
