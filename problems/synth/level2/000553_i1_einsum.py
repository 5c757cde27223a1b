"""Synthetic problem (kagent synth, seed 0, candidate 553)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 2048
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 256}


class Model(nn.Module):
    """i1 -> x @ x^T."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.special.i1(x)
        return torch.einsum('bld,bmd->blm', h, h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
