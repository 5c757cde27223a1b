"""Synthetic problem (kagent synth, seed 0, candidate 198)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
KERNEL_SIZE = 3
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 64}


class Model(nn.Module):
    """rms_norm -> + (residual) -> unfold 3x3 -> rms_norm."""

    def __init__(self, kernel_size):
        super().__init__()
        self.unfold = nn.Unfold(kernel_size=kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        h = h + x
        h = self.unfold(h)
        return F.rms_norm(h, h.shape[-1:])


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE]
