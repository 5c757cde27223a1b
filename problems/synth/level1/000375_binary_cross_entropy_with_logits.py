"""Synthetic problem (kagent synth, seed 0, candidate 375)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
DEPTH = 64
HEIGHT = 128
WIDTH = 64
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """binary_cross_entropy_with_logits (sum)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(x, target, reduction='sum')


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)
    target = torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, target]


def get_init_inputs():
    return []
