"""Synthetic problem (kagent synth, seed 0, candidate 323)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 128
HEIGHT = 128
WIDTH = 64
OUT_CHANNELS = 64
KERNEL_SIZE = 4
STRIDE = 2
PADDING = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 8}


class Model(nn.Module):
    """min over dim 1 -> ConvTranspose2d 4x4 stride 2."""

    def __init__(self, depth, out_channels, kernel_size, stride, padding, dtype):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(depth, out_channels, kernel_size, stride=stride, padding=padding, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.min(x, dim=1)[0]
        return self.conv_transpose2d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [DEPTH, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, DTYPE]
