"""Synthetic problem (kagent synth, seed 0, candidate 482)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 512
WIDTH = 512
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """median over dim 2 -> layer_norm -> maximum (residual) -> concat (dim -1) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.median(x, dim=2)[0]
        h2 = F.layer_norm(h1, h1.shape[-1:])
        h3 = torch.maximum(h2, h1)
        h = torch.cat([h3, h2], dim=-1)
        return torch.cat([h, h3], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
