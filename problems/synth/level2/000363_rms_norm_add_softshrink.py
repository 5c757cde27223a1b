"""Synthetic problem (kagent synth, seed 0, candidate 363)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
LENGTH = 8192
LAMBD = 0.5
KERNEL_SIZE = 3
SMALL_SIZES = {"BATCH": 8, "LENGTH": 512}


class Model(nn.Module):
    """rms_norm -> + (residual) -> softshrink -> * (residual) -> Conv1d 3."""

    def __init__(self, lambd, channels, kernel_size):
        super().__init__()
        self.lambd = lambd
        self.conv1d = nn.Conv1d(channels, channels, kernel_size, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        h = h + x
        h = F.softshrink(h, lambd=self.lambd)
        h = h * x
        return self.conv1d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH).exp()]


def get_init_inputs():
    return [LAMBD, CHANNELS, KERNEL_SIZE]
