"""Synthetic problem (kagent synth, seed 0, candidate 184)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
PADDING = 3
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """ZeroPad2d 3 -> flip (dim 1) -> triu -> logcumsumexp (dim 1) -> logsumexp over dim [2, 3]."""

    def __init__(self, padding):
        super().__init__()
        self.zero_pad2d = nn.ZeroPad2d(padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.zero_pad2d(x)
        h = torch.flip(h, dims=[1])
        h = torch.triu(h)
        h = torch.logcumsumexp(h, dim=1)
        return torch.logsumexp(h, dim=[2, 3], keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [PADDING]
