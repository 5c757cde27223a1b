"""Synthetic problem (kagent synth, seed 0, candidate 61)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 2048
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """softmax (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
