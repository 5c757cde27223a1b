"""Synthetic problem (kagent synth, seed 0, candidate 243)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """log_softmax (dim 2) -> triu."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.log_softmax(x, dim=2)
        return torch.triu(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
