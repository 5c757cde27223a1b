"""Synthetic problem (kagent synth, seed 0, candidate 421)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 128
WIDTH = 128
OUT_FEATURES = 2048
LAMBD = 0.5
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16, "OUT_FEATURES": 256}


class Model(nn.Module):
    """clamp_max -> erf -> flatten -> mm (CHANNELS * HEIGHT * WIDTH -> OUT_FEATURES) -> softshrink."""

    def __init__(self, channels, height, width, out_features, lambd):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1))
        self.flatten = nn.Flatten()
        self.weight = nn.Parameter(torch.randn(channels * height * width, out_features) / math.sqrt(channels * height * width))
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.clamp_max(x, self.scale)
        h = torch.erf(h)
        h = self.flatten(h)
        h = torch.mm(h, self.weight)
        return F.softshrink(h, lambd=self.lambd)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, HEIGHT, WIDTH, OUT_FEATURES, LAMBD]
