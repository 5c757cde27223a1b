"""Synthetic problem (kagent synth, seed 0, candidate 418)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 1024
WIDTH = 512
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """ldexp -> nanmedian over dim 2 -> cummin (dim 1) -> std over dim 1."""

    def __init__(self, channels, dtype):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.ldexp(x, self.scale)
        h = torch.nanmedian(h, dim=2)[0]
        h = torch.cummin(h, dim=1)[0]
        return torch.std(h, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, DTYPE]
