"""Synthetic problem (kagent synth, seed 0, candidate 235)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
KERNEL_SIZE = 7
PADDING = 3
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """xlog1py -> relu -> Conv2d 7x7 -> concat (dim 1)."""

    def __init__(self, channels, kernel_size, padding):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1).exp())
        self.conv2d = nn.Conv2d(channels, channels, kernel_size, padding=padding, groups=channels, padding_mode='reflect')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.special.xlog1py(x, self.scale)
        h = F.relu(h)
        h = self.conv2d(h)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, PADDING]
