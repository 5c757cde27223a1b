"""Synthetic problem (kagent synth, seed 0, candidate 502)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 2048
MIN_VAL = -0.5
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """Hardtanh -> maximum (residual) -> exp2 -> exp."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.hardtanh(x)
        h = torch.maximum(h, x)
        h = torch.exp2(h)
        return torch.exp(h)


def get_inputs():
    return [torch.rand(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
