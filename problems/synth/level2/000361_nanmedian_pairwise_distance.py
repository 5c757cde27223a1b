"""Synthetic problem (kagent synth, seed 0, candidate 361)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
PAIRWISE_DISTANCE_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """nanmedian over dim 1 -> pairwise_distance."""

    def __init__(self, pairwise_distance_p):
        super().__init__()
        self.pairwise_distance_p = pairwise_distance_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.nanmedian(x, dim=1, keepdim=True)[0]
        return F.pairwise_distance(h, y, p=self.pairwise_distance_p)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, 1, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [PAIRWISE_DISTANCE_P]
