"""Synthetic problem (kagent synth, seed 0, candidate 169)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
COLS = 4096
OUT_FEATURES = 1024
ORD = 3
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256, "COLS": 256, "OUT_FEATURES": 64}


class Model(nn.Module):
    """matmul (FEATURES -> COLS) -> tensordot (COLS -> OUT_FEATURES) -> concat (dim 1) -> vector_norm over dim 1."""

    def __init__(self, cols, out_features, ord):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cols, out_features) / math.sqrt(cols))
        self.ord = ord

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.matmul(x, y)
        h = torch.tensordot(h, self.weight, dims=1)
        h = torch.cat([h, x], dim=1)
        return torch.linalg.vector_norm(h, dim=1, ord=self.ord)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(FEATURES, COLS)
    return [x, y]


def get_init_inputs():
    return [COLS, OUT_FEATURES, ORD]
