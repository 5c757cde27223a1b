"""Synthetic problem (kagent synth, seed 0, candidate 246)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
LENGTH = 4096
OUT_CHANNELS = 64
KERNEL_SIZE = 5
PADDING = 2
SMALL_SIZES = {"BATCH": 4, "LENGTH": 1024}


class Model(nn.Module):
    """concat (dim 1) -> Conv1d 5."""

    def __init__(self, channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv1d = nn.Conv1d(2 * channels, out_channels, kernel_size, padding=padding, padding_mode='replicate')

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        return self.conv1d(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, PADDING]
