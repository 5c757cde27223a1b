"""Synthetic problem (kagent synth, seed 0, candidate 292)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 128
WIDTH = 64
LRN_SIZE = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """local_response_norm -> modified_bessel_i0 -> concat (dim 1) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, lrn_size):
        super().__init__()
        self.lrn_size = lrn_size

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.local_response_norm(x, self.lrn_size)
        h = torch.special.modified_bessel_i0(h)
        h = torch.cat([h, y], dim=1)
        h = torch.cat([h, y], dim=1)
        return torch.cat([h, y], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [LRN_SIZE]
