"""Synthetic problem (kagent synth, seed 0, candidate 517)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """hypot -> + (residual) -> + (residual) -> cumsum (dim -1) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.hypot(x, y)
        h = h + x
        h = h + y
        h = torch.cumsum(h, dim=-1)
        return torch.cat([h, y], dim=1)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
