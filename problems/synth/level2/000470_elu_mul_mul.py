"""Synthetic problem (kagent synth, seed 0, candidate 470)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
ALPHA = 1.5
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256}


class Model(nn.Module):
    """elu -> * (residual) -> * (residual) -> * (residual) -> maximum (residual)."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.elu(x, alpha=self.alpha)
        h2 = h1 * x
        h = h2 * h1
        h = h * h2
        return torch.maximum(h, h2)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [ALPHA]
