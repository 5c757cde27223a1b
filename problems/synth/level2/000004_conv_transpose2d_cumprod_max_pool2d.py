"""Synthetic problem (kagent synth, seed 0, candidate 4)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 512
WIDTH = 512
OUT_CHANNELS = 8
KERNEL_SIZE = 2
STRIDE = 2
KERNEL_SIZE_2 = 3
PADDING = 1
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """ConvTranspose2d 2x2 stride 2 -> cumprod (dim 1) -> MaxPool2d 3 -> batch_norm (training mode: batch statistics)."""

    def __init__(self, channels, out_channels, kernel_size, stride, dtype, kernel_size_2, padding):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(channels, out_channels, kernel_size, stride=stride, dtype=dtype)
        self.max_pool2d = nn.MaxPool2d(kernel_size=kernel_size_2, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_transpose2d(x)
        h = torch.cumprod(h, dim=1)
        h = self.max_pool2d(h)
        return F.batch_norm(h, None, None, training=True)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, DTYPE, KERNEL_SIZE_2, PADDING]
