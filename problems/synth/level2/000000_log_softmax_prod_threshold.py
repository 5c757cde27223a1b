"""Synthetic problem (kagent synth, seed 0, candidate 0)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
THRESHOLD = 0.5
VALUE = -1.0
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """log_softmax (dim 1) -> prod over dim 1 -> Threshold -> + (residual)."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = nn.Threshold(threshold=threshold, value=value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.log_softmax(x, dim=1)
        h2 = torch.prod(h, dim=1)
        h = self.threshold(h2)
        return h + h2


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [THRESHOLD, VALUE]
