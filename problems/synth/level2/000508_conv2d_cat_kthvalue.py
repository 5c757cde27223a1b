"""Synthetic problem (kagent synth, seed 0, candidate 508)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
OUT_CHANNELS = 16
KERNEL_SIZE = 7
PADDING = 3
GROUPS = 4
K = 3
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Conv2d 7x7 -> concat (dim 1) -> kthvalue over dim 1."""

    def __init__(self, channels, out_channels, kernel_size, padding, groups, k):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding, groups=groups, padding_mode='replicate')
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv2d(x)
        h = torch.cat([h, x], dim=1)
        return torch.kthvalue(h, dim=1, k=self.k)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, GROUPS, K]
