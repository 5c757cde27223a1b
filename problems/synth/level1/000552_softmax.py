"""Synthetic problem (kagent synth, seed 0, candidate 552)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 2048
FEATURES = 2048
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 256}


class Model(nn.Module):
    """Softmax (dim 1)."""

    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
