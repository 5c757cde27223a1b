"""Synthetic problem (kagent synth, seed 0, candidate 389)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 1024
WIDTH = 1024
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """ReLU."""

    def __init__(self):
        super().__init__()
        self.re_lu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.re_lu(x)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
