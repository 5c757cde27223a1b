"""Synthetic problem (kagent synth, seed 0, candidate 205)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
ALPHA = 0.5
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """upsample x2 bilinear -> ELU -> - (residual) -> maximum (residual)."""

    def __init__(self, scale_factor, alpha):
        super().__init__()
        self.scale_factor = scale_factor
        self.elu = nn.ELU(alpha=alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.interpolate(x, scale_factor=self.scale_factor, mode='bilinear', align_corners=True)
        h = self.elu(h1)
        h = h - h1
        return torch.maximum(h, h1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR, ALPHA]
