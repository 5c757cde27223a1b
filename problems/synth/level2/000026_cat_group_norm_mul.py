"""Synthetic problem (kagent synth, seed 0, candidate 26)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 16384
NUM_GROUPS = 8
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """concat (dim 1) -> GroupNorm -> * (residual) -> Softmax (dim -1)."""

    def __init__(self, num_groups, channels):
        super().__init__()
        self.group_norm = nn.GroupNorm(num_groups, 2 * channels)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.cat([x, y], dim=1)
        h = self.group_norm(h1)
        h = h * h1
        return self.softmax(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x, y]


def get_init_inputs():
    return [NUM_GROUPS, CHANNELS]
