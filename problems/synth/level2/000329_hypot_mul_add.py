"""Synthetic problem (kagent synth, seed 0, candidate 329)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 256
FEATURES = 512
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 64}


class Model(nn.Module):
    """hypot -> * (residual) -> + (residual) -> nansum over dim 1 -> hardswish."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.hypot(x, self.scale)
        h = h1 * x
        h = h + h1
        h = torch.nansum(h, dim=1)
        return F.hardswish(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES]
