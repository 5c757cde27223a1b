"""Synthetic problem (kagent synth, seed 0, candidate 311)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
OUT_CHANNELS = 32
KERNEL_SIZE = 5
STRIDE = 2
PADDING = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """batch_norm (training mode: batch statistics) -> cumprod (dim 1) -> conv2d 5x5 stride 2."""

    def __init__(self, out_channels, channels, kernel_size, dtype, stride, padding):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, channels, kernel_size, kernel_size, dtype=dtype) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels, dtype=dtype))
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.batch_norm(x, None, None, training=True)
        h = torch.cumprod(h, dim=1)
        return F.conv2d(h, self.weight, self.bias, stride=self.stride, padding=self.padding)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, DTYPE, STRIDE, PADDING]
