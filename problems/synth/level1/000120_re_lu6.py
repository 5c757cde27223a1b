"""Synthetic problem (kagent synth, seed 0, candidate 120)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 4096
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """ReLU6."""

    def __init__(self):
        super().__init__()
        self.re_lu6 = nn.ReLU6()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.re_lu6(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
