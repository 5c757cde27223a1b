"""Synthetic problem (kagent synth, seed 0, candidate 260)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
HEIGHT = 512
WIDTH = 512
KERNEL_SIZE = 3
STRIDE = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """elu -> avg_pool2d 3 stride 2."""

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.elu(x)
        return F.avg_pool2d(h, kernel_size=self.kernel_size, stride=self.stride)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE]
