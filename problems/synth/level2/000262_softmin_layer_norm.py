"""Synthetic problem (kagent synth, seed 0, candidate 262)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512}


class Model(nn.Module):
    """softmin (dim -1) -> layer_norm."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.softmin(x, dim=-1)
        return F.layer_norm(h, h.shape[-1:])


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
