"""Synthetic problem (kagent synth, seed 0, candidate 158)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """rms_norm -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
