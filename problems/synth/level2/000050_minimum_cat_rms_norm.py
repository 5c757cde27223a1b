"""Synthetic problem (kagent synth, seed 0, candidate 50)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
HEIGHT = 512
WIDTH = 512
EPS = 1e-06
KERNEL_SIZE = 3
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """minimum -> concat (dim 1) -> RMSNorm -> maximum (residual) -> unfold 3x3."""

    def __init__(self, width, eps, dtype, kernel_size):
        super().__init__()
        self.rms_norm = nn.RMSNorm(width, eps=eps, dtype=dtype)
        self.kernel_size = kernel_size

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.minimum(x, y)
        h2 = torch.cat([h, x], dim=1)
        h = self.rms_norm(h2)
        h = torch.maximum(h, h2)
        return F.unfold(h, kernel_size=self.kernel_size)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [WIDTH, EPS, DTYPE, KERNEL_SIZE]
