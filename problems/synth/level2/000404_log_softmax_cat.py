"""Synthetic problem (kagent synth, seed 0, candidate 404)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """LogSoftmax (dim -1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.log_softmax(x)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
