"""Synthetic problem (kagent synth, seed 0, candidate 510)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 16384
NUM_GROUPS = 2
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """PReLU -> group_norm -> maximum (residual)."""

    def __init__(self, channels, num_groups):
        super().__init__()
        self.slope = nn.Parameter(torch.randn(channels).exp())
        self.num_groups = num_groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.prelu(x, self.slope)
        h = F.group_norm(h1, self.num_groups)
        return torch.maximum(h, h1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, NUM_GROUPS]
