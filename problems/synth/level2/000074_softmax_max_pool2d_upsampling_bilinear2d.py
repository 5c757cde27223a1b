"""Synthetic problem (kagent synth, seed 0, candidate 74)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
KERNEL_SIZE = 3
SCALE_FACTOR = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """softmax (dim -1) -> max_pool2d 3 -> upsample x2 bilinear -> Softmin (dim 1)."""

    def __init__(self, kernel_size, scale_factor):
        super().__init__()
        self.kernel_size = kernel_size
        self.upsampling_bilinear2d = nn.UpsamplingBilinear2d(scale_factor=scale_factor)
        self.softmin = nn.Softmin(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.softmax(x, dim=-1)
        h = F.max_pool2d(h, kernel_size=self.kernel_size)
        h = self.upsampling_bilinear2d(h)
        return self.softmin(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE, SCALE_FACTOR]
