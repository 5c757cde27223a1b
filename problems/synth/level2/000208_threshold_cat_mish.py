"""Synthetic problem (kagent synth, seed 0, candidate 208)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
THRESHOLD = 0.5
VALUE = -1.0
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """Threshold -> concat (dim 1) -> Mish -> i0."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = nn.Threshold(threshold=threshold, value=value)
        self.mish = nn.Mish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.threshold(x)
        h = torch.cat([h, x], dim=1)
        h = self.mish(h)
        return torch.i0(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [THRESHOLD, VALUE]
