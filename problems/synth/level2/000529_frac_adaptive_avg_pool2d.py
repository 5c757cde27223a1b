"""Synthetic problem (kagent synth, seed 0, candidate 529)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 1024
WIDTH = 512
OUTPUT_SIZE = 1
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """frac -> adaptive_avg_pool2d to 1."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.frac(x)
        return F.adaptive_avg_pool2d(h, output_size=self.output_size)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [OUTPUT_SIZE]
