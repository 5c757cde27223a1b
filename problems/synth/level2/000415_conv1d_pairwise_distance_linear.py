"""Synthetic problem (kagent synth, seed 0, candidate 415)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 8192
OUT_CHANNELS = 16
OUT_FEATURES = 2048
OUT_FEATURES_2 = 8192
KERNEL_SIZE = 7
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256, "OUT_FEATURES": 128, "OUT_FEATURES_2": 512}


class Model(nn.Module):
    """Conv1d 7 -> PairwiseDistance -> Linear (OUT_CHANNELS -> OUT_FEATURES) -> linear (OUT_FEATURES -> OUT_FEATURES_2) -> concat (dim 1)."""

    def __init__(self, channels, out_channels, kernel_size, out_features, out_features_2):
        super().__init__()
        self.conv1d = nn.Conv1d(channels, out_channels, kernel_size)
        self.pairwise_distance = nn.PairwiseDistance()
        self.linear = nn.Linear(out_channels, out_features)
        self.weight = nn.Parameter(torch.randn(out_features_2, out_features) / math.sqrt(out_features))
        self.bias = nn.Parameter(torch.randn(out_features_2))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.conv1d(x)
        h = self.pairwise_distance(h, y)
        h3 = self.linear(h)
        h = F.linear(h3, self.weight, self.bias)
        return torch.cat([h, h3], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, OUT_CHANNELS, LENGTH - (KERNEL_SIZE - 1))
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, OUT_FEATURES, OUT_FEATURES_2]
