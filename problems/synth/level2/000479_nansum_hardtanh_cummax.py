"""Synthetic problem (kagent synth, seed 0, candidate 479)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 2048
MIN_VAL = -2.0
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """nansum over dim 1 -> hardtanh -> cummax (dim -1) -> maximum (residual)."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.nansum(x, dim=1, keepdim=True)
        h = F.hardtanh(h1, min_val=self.min_val, max_val=self.max_val)
        h = torch.cummax(h, dim=-1)[0]
        return torch.maximum(h, h1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
