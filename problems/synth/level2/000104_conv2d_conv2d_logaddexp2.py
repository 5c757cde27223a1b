"""Synthetic problem (kagent synth, seed 0, candidate 104)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
OUT_CHANNELS = 32
OUT_CHANNELS_2 = 32
KERNEL_SIZE = 7
STRIDE = 2
PADDING = 3
KERNEL_SIZE_2 = 5
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Conv2d 7x7 stride 2 -> Conv2d 5x5 stride 2 -> logaddexp2 -> * (residual) -> maximum (residual)."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding, out_channels_2, kernel_size_2):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, stride=stride, padding=padding, padding_mode='replicate')
        self.conv2d_2 = nn.Conv2d(out_channels, out_channels_2, kernel_size_2, stride=stride)
        self.scale = nn.Parameter(torch.randn(out_channels_2, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv2d(x)
        h2 = self.conv2d_2(h)
        h = torch.logaddexp2(h2, self.scale)
        h = h * h2
        return torch.maximum(h, h2)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, OUT_CHANNELS_2, KERNEL_SIZE_2]
