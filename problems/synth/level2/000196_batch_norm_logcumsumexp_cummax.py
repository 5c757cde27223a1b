"""Synthetic problem (kagent synth, seed 0, candidate 196)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """batch_norm (training mode: batch statistics) -> logcumsumexp (dim 2) -> cummax (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.batch_norm(x, None, None, training=True)
        h = torch.logcumsumexp(h, dim=2)
        return torch.cummax(h, dim=-1)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
