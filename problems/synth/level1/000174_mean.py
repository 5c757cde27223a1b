"""Synthetic problem (kagent synth, seed 0, candidate 174)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 1024
WIDTH = 1024
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """mean over dim [2, 3]."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=[2, 3], keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
