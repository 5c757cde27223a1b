"""Synthetic problem (kagent synth, seed 0, candidate 258)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 32
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """rms_norm -> * (residual) -> cos -> LogSoftmax (dim 3)."""

    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        h = h * x
        h = torch.cos(h)
        return self.log_softmax(h)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
