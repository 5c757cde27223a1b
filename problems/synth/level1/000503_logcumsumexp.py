"""Synthetic problem (kagent synth, seed 0, candidate 503)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024}


class Model(nn.Module):
    """logcumsumexp (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logcumsumexp(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
