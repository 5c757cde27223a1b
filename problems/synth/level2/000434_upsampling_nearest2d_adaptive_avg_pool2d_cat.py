"""Synthetic problem (kagent synth, seed 0, candidate 434)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
OUTPUT_SIZE = 7
PADDING = 1
PAD_VALUE = -1.0
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """upsample x2 nearest -> adaptive_avg_pool2d to 7 -> concat (dim 1) -> ConstantPad2d 1 -> Softmax2d."""

    def __init__(self, scale_factor, output_size, padding, pad_value):
        super().__init__()
        self.upsampling_nearest2d = nn.UpsamplingNearest2d(scale_factor=scale_factor)
        self.output_size = output_size
        self.constant_pad2d = nn.ConstantPad2d(padding=padding, value=pad_value)
        self.softmax2d = nn.Softmax2d()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.upsampling_nearest2d(x)
        h = F.adaptive_avg_pool2d(h, output_size=self.output_size)
        h = torch.cat([h, y], dim=1)
        h = self.constant_pad2d(h)
        return self.softmax2d(h)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, OUTPUT_SIZE, OUTPUT_SIZE)
    return [x, y]


def get_init_inputs():
    return [SCALE_FACTOR, OUTPUT_SIZE, PADDING, PAD_VALUE]
