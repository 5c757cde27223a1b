"""Synthetic problem (kagent synth, seed 0, candidate 82)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Mish -> concat (dim 1) -> selu -> - (residual)."""

    def __init__(self):
        super().__init__()
        self.mish = nn.Mish()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.mish(x)
        h2 = torch.cat([h, y], dim=1)
        h = F.selu(h2)
        return h - h2


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
