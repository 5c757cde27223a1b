"""Synthetic problem (kagent synth, seed 0, candidate 351)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 512
WIDTH = 512
DOWNSCALE_FACTOR = 2
OUTPUT_SIZE = 4
NUM_GROUPS = 8
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """pixel unshuffle x2 -> adaptive_max_pool2d to 4 -> group_norm."""

    def __init__(self, downscale_factor, output_size, num_groups):
        super().__init__()
        self.pixel_unshuffle = nn.PixelUnshuffle(downscale_factor=downscale_factor)
        self.output_size = output_size
        self.num_groups = num_groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pixel_unshuffle(x)
        h = F.adaptive_max_pool2d(h, output_size=self.output_size)
        return F.group_norm(h, self.num_groups)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [DOWNSCALE_FACTOR, OUTPUT_SIZE, NUM_GROUPS]
