"""Synthetic problem (kagent synth, seed 0, candidate 388)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 256
COLS = 512
SHIFT = 7
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "FEATURES": 128, "COLS": 256}


class Model(nn.Module):
    """bmm (FEATURES -> COLS) -> roll (dim 1)."""

    def __init__(self, shift):
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.bmm(x, y)
        return torch.roll(h, shifts=self.shift, dims=1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, FEATURES, COLS)
    return [x, y]


def get_init_inputs():
    return [SHIFT]
