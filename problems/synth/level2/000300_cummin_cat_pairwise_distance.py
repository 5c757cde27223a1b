"""Synthetic problem (kagent synth, seed 0, candidate 300)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
PAIRWISE_DISTANCE_P = 2.0
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256}


class Model(nn.Module):
    """cummin (dim -1) -> concat (dim 1) -> pairwise_distance -> normalize (dim -1)."""

    def __init__(self, pairwise_distance_p):
        super().__init__()
        self.pairwise_distance_p = pairwise_distance_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cummin(x, dim=-1)[0]
        h = torch.cat([h, x], dim=1)
        h = F.pairwise_distance(h, y, p=self.pairwise_distance_p)
        return F.normalize(h, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, 2 * FEATURES)
    return [x, y]


def get_init_inputs():
    return [PAIRWISE_DISTANCE_P]
