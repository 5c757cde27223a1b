"""Synthetic problem (kagent synth, seed 0, candidate 318)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """instance_norm -> + (residual) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.instance_norm(x)
        h = h + x
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
