"""Synthetic problem (kagent synth, seed 0, candidate 30)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
LENGTH = 8192
SMALL_SIZES = {"BATCH": 4, "LENGTH": 256}


class Model(nn.Module):
    """selu -> sinc -> Softsign -> + (residual)."""

    def __init__(self):
        super().__init__()
        self.softsign = nn.Softsign()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.selu(x)
        h2 = torch.sinc(h)
        h = self.softsign(h2)
        return h + h2


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
