"""Synthetic problem (kagent synth, seed 0, candidate 123)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
KERNEL_SIZE = 3
STRIDE = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """log_softmax (dim 2) -> max_pool2d 3 stride 2 -> concat (dim 1)."""

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.log_softmax(x, dim=2)
        h = F.max_pool2d(h, kernel_size=self.kernel_size, stride=self.stride)
        return torch.cat([h, y], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, (HEIGHT - (KERNEL_SIZE - 1) - 1) // STRIDE + 1, (WIDTH - (KERNEL_SIZE - 1) - 1) // STRIDE + 1)
    return [x, y]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE]
