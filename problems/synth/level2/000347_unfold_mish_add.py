"""Synthetic problem (kagent synth, seed 0, candidate 347)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 16
HEIGHT = 128
WIDTH = 128
KERNEL_SIZE = 3
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """unfold 3x3 -> Mish -> + (residual) -> maximum (residual) -> BatchNorm1d (training mode: batch statistics)."""

    def __init__(self, kernel_size, channels):
        super().__init__()
        self.unfold = nn.Unfold(kernel_size=kernel_size)
        self.mish = nn.Mish()
        self.batch_norm1d = nn.BatchNorm1d(channels * kernel_size ** 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.unfold(x)
        h = self.mish(h1)
        h = h + h1
        h = torch.maximum(h, h1)
        return self.batch_norm1d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE, CHANNELS]
