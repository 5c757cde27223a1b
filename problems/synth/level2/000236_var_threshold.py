"""Synthetic problem (kagent synth, seed 0, candidate 236)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 16
LENGTH = 8192
THRESHOLD = 0.5
VALUE = -1.0
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256}


class Model(nn.Module):
    """var over dim 1 -> Threshold."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = nn.Threshold(threshold=threshold, value=value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.var(x, dim=1, keepdim=True)
        return self.threshold(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [THRESHOLD, VALUE]
