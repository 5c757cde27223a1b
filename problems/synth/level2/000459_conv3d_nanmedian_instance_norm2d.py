"""Synthetic problem (kagent synth, seed 0, candidate 459)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 4
KERNEL_SIZE = 3
STRIDE = 2
SMALL_SIZES = {"BATCH": 2, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """conv3d 3x3x3 stride 2 -> nanmedian over dim 4 -> InstanceNorm2d -> cumsum (dim 2) -> concat (dim 1)."""

    def __init__(self, out_channels, channels, kernel_size, stride):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, channels, kernel_size, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.instance_norm2d = nn.InstanceNorm2d(out_channels, affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.conv3d(x, self.weight, self.bias, stride=self.stride)
        h2 = torch.nanmedian(h, dim=4)[0]
        h = self.instance_norm2d(h2)
        h = torch.cumsum(h, dim=2)
        return torch.cat([h, h2], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUT_CHANNELS, CHANNELS, KERNEL_SIZE, STRIDE]
