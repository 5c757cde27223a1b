"""Synthetic problem (kagent synth, seed 0, candidate 176)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 1024
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """softmin (dim 1) -> x @ x^T -> flip (dim 1) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.softmin(x, dim=1)
        h = torch.einsum('bld,bmd->blm', h, h)
        h = torch.flip(h, dims=[1])
        return torch.cat([h, x], dim=-1)


def get_inputs():
    return [torch.rand(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
