"""Synthetic problem (kagent synth, seed 0, candidate 534)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """Sigmoid -> Hardshrink -> Tanhshrink."""

    def __init__(self):
        super().__init__()
        self.sigmoid = nn.Sigmoid()
        self.hardshrink = nn.Hardshrink()
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.sigmoid(x)
        h = self.hardshrink(h)
        return self.tanhshrink(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
