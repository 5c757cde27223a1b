"""Synthetic problem (kagent synth, seed 0, candidate 520)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 512
WIDTH = 512
OUT_CHANNELS = 8
KERNEL_SIZE = 1
STRIDE = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 64}


class Model(nn.Module):
    """Conv2d 1x1 stride 2 -> rms_norm -> sinh -> concat (dim 1)."""

    def __init__(self, channels, out_channels, kernel_size, stride, width):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, stride=stride)
        self.norm_weight = nn.Parameter(torch.ones((width - 1) // stride + 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.conv2d(x)
        h = F.rms_norm(h1, h1.shape[-1:], self.norm_weight)
        h = torch.sinh(h)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, WIDTH]
