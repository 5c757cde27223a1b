"""Synthetic problem (kagent synth, seed 0, candidate 108)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 4096
DIST_P = 2.0
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 256}


class Model(nn.Module):
    """dist."""

    def __init__(self, dist_p):
        super().__init__()
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.dist(x, y, p=self.dist_p)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return [DIST_P]
