"""Synthetic problem (kagent synth, seed 0, candidate 142)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 512
WIDTH = 256
OUTPUT_SIZE = 1
THRESHOLD = -0.5
VALUE = 0.5
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """hardsigmoid -> AdaptiveMaxPool2d to 1 -> concat (dim 1) -> Threshold."""

    def __init__(self, output_size, threshold, value):
        super().__init__()
        self.adaptive_max_pool2d = nn.AdaptiveMaxPool2d(output_size=output_size)
        self.threshold = nn.Threshold(threshold=threshold, value=value)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.hardsigmoid(x)
        h = self.adaptive_max_pool2d(h)
        h = torch.cat([h, y], dim=1)
        return self.threshold(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, OUTPUT_SIZE, OUTPUT_SIZE)
    return [x, y]


def get_init_inputs():
    return [OUTPUT_SIZE, THRESHOLD, VALUE]
