"""Synthetic problem (kagent synth, seed 0, candidate 281)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 1024
WIDTH = 512
KERNEL_SIZE = 3
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """max_pool2d 3 -> erfc -> concat (dim 1)."""

    def __init__(self, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.max_pool2d(x, kernel_size=self.kernel_size)
        h = torch.erfc(h1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [KERNEL_SIZE]
