"""Synthetic problem (kagent synth, seed 0, candidate 473)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 128
WIDTH = 128
OUT_FEATURES = 1024
OUT_FEATURES_2 = 2048
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16, "OUT_FEATURES": 256, "OUT_FEATURES_2": 512}


class Model(nn.Module):
    """flatten -> tensordot (CHANNELS * HEIGHT * WIDTH -> OUT_FEATURES) -> addmm (OUT_FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, channels, height, width, out_features, out_features_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels * height * width, out_features) / math.sqrt(channels * height * width))
        self.bias = nn.Parameter(torch.randn(out_features_2))
        self.weight_2 = nn.Parameter(torch.randn(out_features, out_features_2) / math.sqrt(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.flatten(x, start_dim=1)
        h = torch.tensordot(h, self.weight, dims=1)
        return torch.addmm(self.bias, h, self.weight_2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, HEIGHT, WIDTH, OUT_FEATURES, OUT_FEATURES_2]
