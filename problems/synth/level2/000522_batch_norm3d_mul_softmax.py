"""Synthetic problem (kagent synth, seed 0, candidate 522)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 4
DEPTH = 128
HEIGHT = 128
WIDTH = 32
SMALL_SIZES = {"BATCH": 2, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """BatchNorm3d (training mode: batch statistics) -> * (residual) -> Softmax (dim -1)."""

    def __init__(self, channels):
        super().__init__()
        self.batch_norm3d = nn.BatchNorm3d(channels)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.batch_norm3d(x)
        h = h * x
        return self.softmax(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
