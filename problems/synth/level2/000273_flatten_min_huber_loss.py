"""Synthetic problem (kagent synth, seed 0, candidate 273)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
CHANNELS = 32
LENGTH = 16384
DELTA = 2.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 512}


class Model(nn.Module):
    """flatten -> min over dim 1 -> huber_loss (sum)."""

    def __init__(self, delta):
        super().__init__()
        self.delta = delta

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = torch.flatten(x, start_dim=1)
        h = torch.min(h, dim=1)[0]
        return F.huber_loss(h, target, reduction='sum', delta=self.delta)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)
    target = torch.randn(BATCH, dtype=DTYPE)
    return [x, target]


def get_init_inputs():
    return [DELTA]
