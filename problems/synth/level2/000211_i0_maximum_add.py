"""Synthetic problem (kagent synth, seed 0, candidate 211)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 1024
FEATURES = 1024
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 256}


class Model(nn.Module):
    """i0 -> maximum (residual) -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.i0(x)
        h = torch.maximum(h1, x)
        return h + h1


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
