"""Synthetic problem (kagent synth, seed 0, candidate 516)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 1024
WIDTH = 1024
OUTPUT_SIZE = 1
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """adaptive_avg_pool2d to 1 -> PReLU -> concat (dim 1)."""

    def __init__(self, output_size, channels):
        super().__init__()
        self.output_size = output_size
        self.slope = nn.Parameter(torch.randn(channels).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.adaptive_avg_pool2d(x, output_size=self.output_size)
        h = F.prelu(h1, self.slope)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUTPUT_SIZE, CHANNELS]
