"""Synthetic problem (kagent synth, seed 0, candidate 149)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
OUT_CHANNELS = 32
KERNEL_SIZE = 3
KERNEL_SIZE_2 = 2
STRIDE = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """SiLU -> Conv2d 3x3 -> avg_pool2d 2 stride 1."""

    def __init__(self, channels, out_channels, kernel_size, dtype, kernel_size_2, stride):
        super().__init__()
        self.si_lu = nn.SiLU()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, dtype=dtype)
        self.kernel_size_2 = kernel_size_2
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.si_lu(x)
        h = self.conv2d(h)
        return F.avg_pool2d(h, kernel_size=self.kernel_size_2, stride=self.stride)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, DTYPE, KERNEL_SIZE_2, STRIDE]
