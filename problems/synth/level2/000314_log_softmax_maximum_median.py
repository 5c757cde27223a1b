"""Synthetic problem (kagent synth, seed 0, candidate 314)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256}


class Model(nn.Module):
    """LogSoftmax (dim -1) -> maximum (residual) -> median over dim 1 -> mish -> fmin (residual)."""

    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.log_softmax(x)
        h = torch.maximum(h, x)
        h3 = torch.median(h, dim=1, keepdim=True)[0]
        h = F.mish(h3)
        return torch.fmin(h, h3)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return []
