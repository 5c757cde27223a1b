"""Synthetic problem (kagent synth, seed 0, candidate 161)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """upsample x2 nearest -> batch_norm (training mode: batch statistics) -> + (residual) -> maximum (residual)."""

    def __init__(self, scale_factor):
        super().__init__()
        self.scale_factor = scale_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.interpolate(x, scale_factor=self.scale_factor, mode='nearest')
        h2 = F.batch_norm(h1, None, None, training=True)
        h = h2 + h1
        return torch.maximum(h, h2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR]
