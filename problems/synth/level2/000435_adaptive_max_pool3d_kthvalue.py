"""Synthetic problem (kagent synth, seed 0, candidate 435)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 4
DEPTH = 128
HEIGHT = 64
WIDTH = 128
OUTPUT_SIZE = 4
K = 1
SMALL_SIZES = {"BATCH": 2, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """AdaptiveMaxPool3d to 4 -> kthvalue over dim 4."""

    def __init__(self, output_size, k):
        super().__init__()
        self.adaptive_max_pool3d = nn.AdaptiveMaxPool3d(output_size=output_size)
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.adaptive_max_pool3d(x)
        return torch.kthvalue(h, dim=4, k=self.k)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUTPUT_SIZE, K]
