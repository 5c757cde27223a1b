"""Synthetic problem (kagent synth, seed 0, candidate 129)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """softmax (dim 1) -> batch_norm (training mode: batch statistics) -> airy_ai -> - (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.softmax(x, dim=1)
        h = F.batch_norm(h, None, None, training=True)
        h = torch.special.airy_ai(h)
        return h - x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
