"""Synthetic problem (kagent synth, seed 0, candidate 272)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 8192
MIN_VAL = -2.0
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 512, "FEATURES": 512}


class Model(nn.Module):
    """cummax (dim -1) -> hardtanh."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummax(x, dim=-1)[0]
        return F.hardtanh(h, min_val=self.min_val, max_val=self.max_val)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
