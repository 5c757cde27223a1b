"""Synthetic problem (kagent synth, seed 0, candidate 399)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 64
HEIGHT = 32
WIDTH = 32
NEGATIVE_SLOPE = 0.2
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 8}


class Model(nn.Module):
    """rms_norm -> concat (dim 1) -> LeakyReLU."""

    def __init__(self, negative_slope):
        super().__init__()
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        h = torch.cat([h, x], dim=1)
        return self.leaky_re_lu(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
