"""Synthetic problem (kagent synth, seed 0, candidate 137)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024}


class Model(nn.Module):
    """log_softmax (dim -1) -> log_softmax (dim -1) -> cumsum (dim -1) -> log_softmax (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.log_softmax(x, dim=-1)
        h = torch.log_softmax(h, dim=-1)
        h = torch.cumsum(h, dim=-1)
        return torch.log_softmax(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
