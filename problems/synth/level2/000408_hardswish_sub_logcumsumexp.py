"""Synthetic problem (kagent synth, seed 0, candidate 408)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 128
FEATURES = 1024
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """hardswish -> - (residual) -> logcumsumexp (dim -1) -> Linear (FEATURES -> OUT_FEATURES)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.hardswish(x)
        h = h - x
        h = torch.logcumsumexp(h, dim=-1)
        return self.linear(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
