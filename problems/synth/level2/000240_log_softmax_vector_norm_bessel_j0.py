"""Synthetic problem (kagent synth, seed 0, candidate 240)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 2048
FEATURES = 1024
COLS = 2048
ORD = 1
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 64, "COLS": 128}


class Model(nn.Module):
    """LogSoftmax (dim 1) -> vector_norm over dim 1 -> bessel_j0 -> matmul (FEATURES -> COLS)."""

    def __init__(self, ord):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.ord = ord

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.log_softmax(x)
        h = torch.linalg.vector_norm(h, dim=1, ord=self.ord)
        h = torch.special.bessel_j0(h)
        return torch.matmul(h, y)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(FEATURES, COLS)
    return [x, y]


def get_init_inputs():
    return [ORD]
