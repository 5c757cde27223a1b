"""Synthetic problem (kagent synth, seed 0, candidate 316)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 256
WIDTH = 512
SCALE_FACTOR = 2
ORD = 3
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """upsample x2 bilinear -> vector_norm over dim [2, 3]."""

    def __init__(self, scale_factor, ord):
        super().__init__()
        self.upsampling_bilinear2d = nn.UpsamplingBilinear2d(scale_factor=scale_factor)
        self.ord = ord

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.upsampling_bilinear2d(x)
        return torch.linalg.vector_norm(h, dim=[2, 3], ord=self.ord)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR, ORD]
