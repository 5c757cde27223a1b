"""Synthetic problem (kagent synth, seed 0, candidate 392)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 512
DIST_P = 1.0
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 128, "FEATURES": 256}


class Model(nn.Module):
    """modified_bessel_i0 -> - (residual) -> concat (dim -1) -> dist."""

    def __init__(self, dist_p):
        super().__init__()
        self.dist_p = dist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.special.modified_bessel_i0(x)
        h = h - x
        h = torch.cat([h, x], dim=-1)
        return torch.dist(h, y, p=self.dist_p)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, 2 * FEATURES)
    return [x, y]


def get_init_inputs():
    return [DIST_P]
