"""Synthetic problem (kagent synth, seed 0, candidate 206)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 1024
FEATURES = 1024
POINTS = 4096
NORM_P = 2
CDIST_P = 1.0
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 64, "POINTS": 256}


class Model(nn.Module):
    """celu -> norm over dim 1 -> cdist -> concat (dim 1)."""

    def __init__(self, norm_p, cdist_p):
        super().__init__()
        self.norm_p = norm_p
        self.cdist_p = cdist_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.celu(x)
        h2 = torch.norm(h, dim=1, p=self.norm_p)
        h = torch.cdist(h2, y, p=self.cdist_p)
        return torch.cat([h, h2], dim=1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(POINTS, FEATURES)
    return [x, y]


def get_init_inputs():
    return [NORM_P, CDIST_P]
