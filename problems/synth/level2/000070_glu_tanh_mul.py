"""Synthetic problem (kagent synth, seed 0, candidate 70)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 512
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 64}


class Model(nn.Module):
    """GLU (dim 1) -> tanh -> * (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.glu(x, dim=1)
        h = torch.tanh(h1)
        return h * h1


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
