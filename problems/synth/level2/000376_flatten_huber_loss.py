"""Synthetic problem (kagent synth, seed 0, candidate 376)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 512
WIDTH = 1024
DELTA = 0.5
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """flatten -> huber_loss (mean)."""

    def __init__(self, delta):
        super().__init__()
        self.delta = delta

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = torch.flatten(x, start_dim=1)
        return F.huber_loss(h, target, reduction='mean', delta=self.delta)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    target = torch.randn(BATCH, CHANNELS * HEIGHT * WIDTH, dtype=DTYPE)
    return [x, target]


def get_init_inputs():
    return [DELTA]
