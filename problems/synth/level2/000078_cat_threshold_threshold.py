"""Synthetic problem (kagent synth, seed 0, candidate 78)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
THRESHOLD = 0.5
VALUE = -1.0
THRESHOLD_2 = -0.5
VALUE_2 = 0.5
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024}


class Model(nn.Module):
    """concat (dim 1) -> Threshold -> Threshold."""

    def __init__(self, threshold, value, threshold_2, value_2):
        super().__init__()
        self.threshold = nn.Threshold(threshold=threshold, value=value)
        self.threshold_2 = nn.Threshold(threshold=threshold_2, value=value_2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.threshold(h)
        return self.threshold_2(h)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [THRESHOLD, VALUE, THRESHOLD_2, VALUE_2]
