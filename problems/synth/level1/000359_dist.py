"""Synthetic problem (kagent synth, seed 0, candidate 359)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 4096
DIST_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """dist."""

    def __init__(self, dist_p):
        super().__init__()
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.dist(x, y, p=self.dist_p)


def get_inputs():
    x = torch.rand(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [DIST_P]
