"""Synthetic problem (kagent synth, seed 0, candidate 234)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
LENGTH = 8192
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """flatten -> relu -> cosine_similarity -> exp."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.flatten(x)
        h = F.relu(h)
        h = F.cosine_similarity(h, y, dim=1)
        return torch.exp(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS * LENGTH)
    return [x, y]


def get_init_inputs():
    return []
