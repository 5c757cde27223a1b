"""Synthetic problem (kagent synth, seed 0, candidate 88)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
ALPHA = 0.5
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """ELU -> concat (dim 1) -> std over dim 1."""

    def __init__(self, alpha):
        super().__init__()
        self.elu = nn.ELU(alpha=alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.elu(x)
        h = torch.cat([h, x], dim=1)
        return torch.std(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [ALPHA]
