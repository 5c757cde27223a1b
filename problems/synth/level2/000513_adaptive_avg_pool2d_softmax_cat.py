"""Synthetic problem (kagent synth, seed 0, candidate 513)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 1024
WIDTH = 1024
OUTPUT_SIZE = 7
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """adaptive_avg_pool2d to 7 -> softmax (dim 2) -> concat (dim 1)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.adaptive_avg_pool2d(x, output_size=self.output_size)
        h = torch.softmax(h1, dim=2)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [OUTPUT_SIZE]
