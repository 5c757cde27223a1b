"""Synthetic problem (kagent synth, seed 0, candidate 194)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 1024
FEATURES = 1024
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 128}


class Model(nn.Module):
    """relu -> * (residual) -> selu."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(x)
        h = h * x
        return F.selu(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
