"""Synthetic problem (kagent synth, seed 0, candidate 153)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 8192
SHIFT = 1.0
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """tril -> - (residual) -> + -> batch_norm (training mode: batch statistics) -> batch_norm (training mode: batch statistics)."""

    def __init__(self, shift):
        super().__init__()
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tril(x)
        h = h - x
        h = h + self.shift
        h = F.batch_norm(h, None, None, training=True)
        return F.batch_norm(h, None, None, training=True)


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return [SHIFT]
