"""Synthetic problem (kagent synth, seed 0, candidate 455)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 128
WIDTH = 128
SCALE_FACTOR = 2
ORD = 1
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """upsample x2 bilinear -> concat (dim 1) -> concat (dim 1) -> triu -> vector_norm over dim 1."""

    def __init__(self, scale_factor, ord):
        super().__init__()
        self.upsample = nn.Upsample(scale_factor=scale_factor, mode='bilinear', align_corners=True)
        self.ord = ord

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = self.upsample(x)
        h = torch.cat([h1, y], dim=1)
        h = torch.cat([h, h1], dim=1)
        h = torch.triu(h)
        return torch.linalg.vector_norm(h, dim=1, ord=self.ord)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE).exp()
    y = torch.randn(BATCH, CHANNELS, SCALE_FACTOR * HEIGHT, SCALE_FACTOR * WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [SCALE_FACTOR, ORD]
