"""Synthetic problem (kagent synth, seed 0, candidate 170)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
PAIRWISE_DISTANCE_P = 2.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256}


class Model(nn.Module):
    """rms_norm -> + (residual) -> pairwise_distance -> Softmin (dim -1) -> * (residual)."""

    def __init__(self, features, dtype, pairwise_distance_p):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(features, dtype=dtype))
        self.pairwise_distance_p = pairwise_distance_p
        self.softmin = nn.Softmin(dim=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:], self.norm_weight)
        h = h + x
        h3 = F.pairwise_distance(h, y, p=self.pairwise_distance_p)
        h = self.softmin(h3)
        return h * h3


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [FEATURES, DTYPE, PAIRWISE_DISTANCE_P]
