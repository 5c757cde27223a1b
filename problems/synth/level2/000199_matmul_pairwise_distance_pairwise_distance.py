"""Synthetic problem (kagent synth, seed 0, candidate 199)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
OUT_FEATURES = 2048
PAIRWISEDISTANCE_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024, "OUT_FEATURES": 128}


class Model(nn.Module):
    """matmul (FEATURES -> OUT_FEATURES) -> PairwiseDistance -> PairwiseDistance."""

    def __init__(self, features, out_features, dtype, pairwisedistance_p):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))
        self.pairwise_distance = nn.PairwiseDistance(p=pairwisedistance_p)
        self.pairwise_distance_2 = nn.PairwiseDistance()

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = torch.matmul(x, self.weight)
        h = self.pairwise_distance(h, y)
        return self.pairwise_distance_2(h, y_2)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, OUT_FEATURES, dtype=DTYPE)
    y_2 = torch.randn(BATCH, dtype=DTYPE)
    return [x, y, y_2]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE, PAIRWISEDISTANCE_P]
