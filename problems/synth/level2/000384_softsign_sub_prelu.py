"""Synthetic problem (kagent synth, seed 0, candidate 384)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
LENGTH = 4096
SMALL_SIZES = {"BATCH": 16, "LENGTH": 512}


class Model(nn.Module):
    """Softsign -> - (residual) -> PReLU -> xlog1py -> concat (dim 1)."""

    def __init__(self, channels):
        super().__init__()
        self.softsign = nn.Softsign()
        self.slope = nn.Parameter(torch.randn(channels).exp())
        self.scale = nn.Parameter(torch.randn(channels, 1).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softsign(x)
        h = h - x
        h3 = F.prelu(h, self.slope)
        h = torch.special.xlog1py(h3, self.scale)
        return torch.cat([h, h3], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS]
