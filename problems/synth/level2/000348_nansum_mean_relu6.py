"""Synthetic problem (kagent synth, seed 0, candidate 348)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 512
WIDTH = 1024
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 64}


class Model(nn.Module):
    """nansum over dim 3 -> mean over dim 2 -> relu6."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nansum(x, dim=3)
        h = torch.mean(h, dim=2)
        return F.relu6(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
