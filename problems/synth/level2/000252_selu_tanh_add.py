"""Synthetic problem (kagent synth, seed 0, candidate 252)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256}


class Model(nn.Module):
    """selu -> Tanh -> + (residual)."""

    def __init__(self):
        super().__init__()
        self.tanh = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.selu(x)
        h = self.tanh(h)
        return h + x


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
