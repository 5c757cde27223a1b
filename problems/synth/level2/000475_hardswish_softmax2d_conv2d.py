"""Synthetic problem (kagent synth, seed 0, candidate 475)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
OUT_CHANNELS = 16
KERNEL_SIZE = 5
PADDING = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """hardswish -> Softmax2d -> Conv2d 5x5."""

    def __init__(self, channels, out_channels, kernel_size, padding, dtype):
        super().__init__()
        self.softmax2d = nn.Softmax2d()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, padding=padding, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.hardswish(x)
        h = self.softmax2d(h)
        return self.conv2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, DTYPE]
