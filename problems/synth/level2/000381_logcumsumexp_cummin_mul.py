"""Synthetic problem (kagent synth, seed 0, candidate 381)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 256
FEATURES = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 256}


class Model(nn.Module):
    """logcumsumexp (dim -1) -> cummin (dim 1) -> * (residual) -> - (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.logcumsumexp(x, dim=-1)
        h = torch.cummin(h, dim=1)[0]
        h = h * x
        return h - x


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
