"""Synthetic problem (kagent synth, seed 0, candidate 267)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """relu -> - (residual) -> mse_loss (mean)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = torch.relu(x)
        h = h - x
        return F.mse_loss(h, target, reduction='mean')


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    target = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    return [x, target]


def get_init_inputs():
    return []
