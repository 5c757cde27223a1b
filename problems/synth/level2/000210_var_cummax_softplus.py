"""Synthetic problem (kagent synth, seed 0, candidate 210)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
BETA = 0.5
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """var over dim 1 -> cummax (dim 0) -> softplus -> * (residual)."""

    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.var(x, dim=1, keepdim=True)
        h = torch.cummax(h1, dim=0)[0]
        h = F.softplus(h, beta=self.beta)
        return h * h1


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [BETA]
