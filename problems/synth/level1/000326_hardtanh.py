"""Synthetic problem (kagent synth, seed 0, candidate 326)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 1024
WIDTH = 512
MIN_VAL = -2.0
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """Hardtanh."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hardtanh(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
