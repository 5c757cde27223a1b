"""Synthetic problem (kagent synth, seed 0, candidate 446)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 8192
OUT_CHANNELS = 16
KERNEL_SIZE = 3
PADDING = 1
GROUPS = 2
PAD = [3, 3]
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """Conv1d 3 -> pad 3 circular -> std over dim 2."""

    def __init__(self, channels, out_channels, kernel_size, padding, groups, dtype, pad):
        super().__init__()
        self.conv1d = nn.Conv1d(channels, out_channels, kernel_size, padding=padding, groups=groups, dtype=dtype)
        self.pad = pad

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1d(x)
        h = F.pad(h, pad=self.pad, mode='circular')
        return torch.std(h, dim=2)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING, GROUPS, DTYPE, PAD]
