"""Synthetic problem (kagent synth, seed 0, candidate 521)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 1024
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 256}


class Model(nn.Module):
    """ldexp -> hardswish."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.ldexp(x, y)
        return F.hardswish(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return []
