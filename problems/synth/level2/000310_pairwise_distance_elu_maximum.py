"""Synthetic problem (kagent synth, seed 0, candidate 310)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
ALPHA = 0.5
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """PairwiseDistance -> elu -> maximum (residual)."""

    def __init__(self, alpha):
        super().__init__()
        self.pairwise_distance = nn.PairwiseDistance()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = self.pairwise_distance(x, y)
        h = F.elu(h1, alpha=self.alpha)
        return torch.maximum(h, h1)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [ALPHA]
