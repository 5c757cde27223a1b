"""Synthetic problem (kagent synth, seed 0, candidate 337)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
OUTPUT_SIZE = 4
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """AdaptiveAvgPool2d to 4 -> Softmax2d -> argmin over dim 3."""

    def __init__(self, output_size):
        super().__init__()
        self.adaptive_avg_pool2d = nn.AdaptiveAvgPool2d(output_size=output_size)
        self.softmax2d = nn.Softmax2d()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.adaptive_avg_pool2d(x)
        h = self.softmax2d(h)
        return torch.argmin(h, dim=3)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [OUTPUT_SIZE]
