"""Synthetic problem (kagent synth, seed 0, candidate 545)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 512
WIDTH = 256
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """cummax (dim 1) -> layer_norm -> maximum (residual) -> concat (dim 1) -> nanmean over dim 3."""

    def __init__(self, width, dtype):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(width, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummax(x, dim=1)[0]
        h = F.layer_norm(h, h.shape[-1:], self.norm_weight)
        h = torch.maximum(h, x)
        h = torch.cat([h, x], dim=1)
        return torch.nanmean(h, dim=3)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [WIDTH, DTYPE]
