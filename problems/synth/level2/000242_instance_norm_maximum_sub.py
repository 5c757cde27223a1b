"""Synthetic problem (kagent synth, seed 0, candidate 242)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
NEGATIVE_SLOPE = 0.1
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """instance_norm -> maximum (residual) -> - (residual) -> leaky_relu."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.instance_norm(x)
        h = torch.maximum(h, x)
        h = h - x
        return F.leaky_relu(h, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
