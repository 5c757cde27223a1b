"""Synthetic problem (kagent synth, seed 0, candidate 448)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 512
WIDTH = 512
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """flatten -> softmax (dim -1) -> - (residual)."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.flatten(x)
        h = F.softmax(h1, dim=-1)
        return h - h1


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
