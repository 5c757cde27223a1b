"""Synthetic problem (kagent synth, seed 0, candidate 416)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
THRESHOLD = 0.1
VALUE = 0.0
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256}


class Model(nn.Module):
    """threshold -> maximum (residual) -> softmin (dim -1)."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = threshold
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.threshold(x, threshold=self.threshold, value=self.value)
        h = torch.maximum(h, x)
        return F.softmin(h, dim=-1)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return [THRESHOLD, VALUE]
