"""Synthetic problem (kagent synth, seed 0, candidate 491)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
THRESHOLD = 0.5
VALUE = -1.0
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """threshold."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = threshold
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.threshold(x, threshold=self.threshold, value=self.value)


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return [THRESHOLD, VALUE]
