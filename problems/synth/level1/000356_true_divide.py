"""Synthetic problem (kagent synth, seed 0, candidate 356)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """true_divide."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.true_divide(x, self.scale)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES]
