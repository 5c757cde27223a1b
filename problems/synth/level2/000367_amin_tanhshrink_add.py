"""Synthetic problem (kagent synth, seed 0, candidate 367)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512}


class Model(nn.Module):
    """amin over dim 1 -> tanhshrink -> + (residual) -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.amin(x, dim=1)
        h2 = F.tanhshrink(h1)
        h = h2 + h1
        return h + h2


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
