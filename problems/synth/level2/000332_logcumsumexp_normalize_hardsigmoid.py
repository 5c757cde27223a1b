"""Synthetic problem (kagent synth, seed 0, candidate 332)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
LENGTH = 16384
NORMALIZE_P = 1.0
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """logcumsumexp (dim -1) -> normalize (dim 1) -> hardsigmoid -> cosh."""

    def __init__(self, normalize_p):
        super().__init__()
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.logcumsumexp(x, dim=-1)
        h = F.normalize(h, dim=1, p=self.normalize_p)
        h = F.hardsigmoid(h)
        return torch.cosh(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [NORMALIZE_P]
