"""Synthetic problem (kagent synth, seed 0, candidate 253)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 1024
FEATURES = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "FEATURES": 128}


class Model(nn.Module):
    """var over dim 2."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.var(x, dim=2)


def get_inputs():
    return [torch.rand(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
