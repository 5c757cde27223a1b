"""Synthetic problem (kagent synth, seed 0, candidate 209)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
LENGTH = 8192
ALPHA = 2.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 512}


class Model(nn.Module):
    """batch_norm (training mode: batch statistics) -> + (residual) -> concat (dim 1) -> CELU."""

    def __init__(self, alpha):
        super().__init__()
        self.celu = nn.CELU(alpha=alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.batch_norm(x, None, None, training=True)
        h = h + x
        h = torch.cat([h, x], dim=1)
        return self.celu(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [ALPHA]
