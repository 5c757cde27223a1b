"""Synthetic problem (kagent synth, seed 0, candidate 391)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
NEGATIVE_SLOPE = 0.1
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256}


class Model(nn.Module):
    """leaky_relu -> - (residual) -> maximum (residual) -> concat (dim 1) -> mean over dim 1."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.leaky_relu(x, negative_slope=self.negative_slope)
        h = h1 - x
        h = torch.maximum(h, h1)
        h = torch.cat([h, x], dim=1)
        return torch.mean(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
