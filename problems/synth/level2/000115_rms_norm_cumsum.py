"""Synthetic problem (kagent synth, seed 0, candidate 115)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
EPS = 1e-05
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """RMSNorm -> cumsum (dim -1)."""

    def __init__(self, features, eps):
        super().__init__()
        self.rms_norm = nn.RMSNorm(features, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rms_norm(x)
        return torch.cumsum(h, dim=-1)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, EPS]
