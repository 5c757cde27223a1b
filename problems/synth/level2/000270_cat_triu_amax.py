"""Synthetic problem (kagent synth, seed 0, candidate 270)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 512
WIDTH = 512
OUT_FEATURES = 512
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 64, "OUT_FEATURES": 64}


class Model(nn.Module):
    """concat (dim 1) -> triu -> amax over dim 2 -> Linear (WIDTH -> OUT_FEATURES) -> log_softmax (dim 1)."""

    def __init__(self, width, out_features):
        super().__init__()
        self.linear = nn.Linear(width, out_features)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = torch.triu(h)
        h = torch.amax(h, dim=2)
        h = self.linear(h)
        return torch.log_softmax(h, dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [WIDTH, OUT_FEATURES]
