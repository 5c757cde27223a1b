"""Synthetic problem (kagent synth, seed 0, candidate 69)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 4096
OUT_CHANNELS = 32
KERNEL_SIZE = 2
STRIDE = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """ConvTranspose1d 2 stride 2 -> hardswish -> + (residual)."""

    def __init__(self, channels, out_channels, kernel_size, stride, dtype):
        super().__init__()
        self.conv_transpose1d = nn.ConvTranspose1d(channels, out_channels, kernel_size, stride=stride, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.conv_transpose1d(x)
        h = F.hardswish(h1)
        return h + h1


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, DTYPE]
