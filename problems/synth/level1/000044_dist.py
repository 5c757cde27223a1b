"""Synthetic problem (kagent synth, seed 0, candidate 44)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
DIST_P = 1.0
SMALL_SIZES = {"BATCH": 128, "FEATURES": 512}


class Model(nn.Module):
    """dist."""

    def __init__(self, dist_p):
        super().__init__()
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.dist(x, y, p=self.dist_p)


def get_inputs():
    x = torch.rand(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [DIST_P]
