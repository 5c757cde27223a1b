"""Synthetic problem (kagent synth, seed 0, candidate 269)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
MIN_VAL = -2.0
MAX_VAL = 2.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 512}


class Model(nn.Module):
    """concat (dim 1) -> Softmax (dim -1) -> Hardtanh."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.softmax(h)
        return self.hardtanh(h)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
