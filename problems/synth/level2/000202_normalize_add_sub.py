"""Synthetic problem (kagent synth, seed 0, candidate 202)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
NORMALIZE_P = 1.0
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """normalize (dim -1) -> + (residual) -> - (residual)."""

    def __init__(self, normalize_p):
        super().__init__()
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.normalize(x, dim=-1, p=self.normalize_p)
        h = h + x
        return h - x


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return [NORMALIZE_P]
