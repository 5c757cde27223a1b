"""Synthetic problem (kagent synth, seed 0, candidate 94)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """Tanhshrink -> * (residual)."""

    def __init__(self):
        super().__init__()
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.tanhshrink(x)
        return h * x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE).exp()]


def get_init_inputs():
    return []
