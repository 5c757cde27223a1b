"""Synthetic problem (kagent synth, seed 0, candidate 494)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
DIST_P = 1.0
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """Softmax (dim -1) -> concat (dim 1) -> concat (dim 1) -> concat (dim 1) -> dist."""

    def __init__(self, dist_p):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.softmax(x)
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, x], dim=1)
        return torch.dist(h, y, p=self.dist_p)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, 2 * FEATURES + FEATURES + FEATURES)
    return [x, y]


def get_init_inputs():
    return [DIST_P]
