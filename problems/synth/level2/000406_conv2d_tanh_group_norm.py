"""Synthetic problem (kagent synth, seed 0, candidate 406)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 512
WIDTH = 512
OUT_CHANNELS = 32
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
NUM_GROUPS = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """Conv2d 3x3 stride 2 -> Tanh -> GroupNorm -> maximum (residual) -> softmax (dim 2)."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding, dtype, num_groups):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, out_channels, kernel_size, stride=stride, padding=padding, dtype=dtype)
        self.tanh = nn.Tanh()
        self.group_norm = nn.GroupNorm(num_groups, out_channels, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv2d(x)
        h2 = self.tanh(h)
        h = self.group_norm(h2)
        h = torch.maximum(h, h2)
        return torch.softmax(h, dim=2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, DTYPE, NUM_GROUPS]
