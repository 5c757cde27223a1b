"""Synthetic problem (kagent synth, seed 0, candidate 436)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SHIFT = 3
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """std over dim 1 -> softsign -> cumsum (dim -1) -> roll (dim -1) -> * (residual)."""

    def __init__(self, shift):
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.std(x, dim=1)
        h2 = F.softsign(h)
        h = torch.cumsum(h2, dim=-1)
        h = torch.roll(h, shifts=self.shift, dims=-1)
        return h * h2


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return [SHIFT]
