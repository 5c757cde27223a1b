"""Synthetic problem (kagent synth, seed 0, candidate 223)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 8192
NORM_P = 1
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256}


class Model(nn.Module):
    """norm over dim 1."""

    def __init__(self, norm_p):
        super().__init__()
        self.norm_p = norm_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.norm(x, dim=1, p=self.norm_p)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [NORM_P]
