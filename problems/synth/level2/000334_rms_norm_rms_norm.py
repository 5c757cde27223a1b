"""Synthetic problem (kagent synth, seed 0, candidate 334)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 16
LENGTH = 16384
SMALL_SIZES = {"BATCH": 8, "LENGTH": 1024}


class Model(nn.Module):
    """rms_norm -> rms_norm."""

    def __init__(self, length):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        return F.rms_norm(h, h.shape[-1:], self.norm_weight)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [LENGTH]
