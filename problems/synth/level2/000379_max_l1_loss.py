"""Synthetic problem (kagent synth, seed 0, candidate 379)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 128
HEIGHT = 128
WIDTH = 128
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """max over dim 3 -> l1_loss (mean)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = torch.max(x, dim=3)[0]
        return F.l1_loss(h, target, reduction='mean')


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE).exp()
    target = torch.randn(BATCH, CHANNELS, DEPTH, WIDTH, dtype=DTYPE)
    return [x, target]


def get_init_inputs():
    return []
