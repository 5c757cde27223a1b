"""Synthetic problem (kagent synth, seed 0, candidate 541)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 8
LENGTH = 16384
SMALL_SIZES = {"BATCH": 4, "LENGTH": 256}


class Model(nn.Module):
    """airy_ai -> maximum (residual) -> maximum (residual) -> maximum (residual) -> logsumexp over dim 2."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.special.airy_ai(x)
        h2 = torch.maximum(h1, x)
        h = torch.maximum(h2, h1)
        h = torch.maximum(h, h2)
        return torch.logsumexp(h, dim=2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
