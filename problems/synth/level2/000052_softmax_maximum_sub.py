"""Synthetic problem (kagent synth, seed 0, candidate 52)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 128
WIDTH = 128
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Softmax (dim 1) -> maximum (residual) -> - (residual) -> + (residual) -> tril."""

    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softmax(x)
        h = torch.maximum(h, x)
        h = h - x
        h = h + x
        return torch.tril(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
