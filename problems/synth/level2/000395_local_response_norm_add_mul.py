"""Synthetic problem (kagent synth, seed 0, candidate 395)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
LRN_SIZE = 5
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """local_response_norm -> + (residual) -> * (residual)."""

    def __init__(self, lrn_size):
        super().__init__()
        self.lrn_size = lrn_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.local_response_norm(x, self.lrn_size)
        h = h + x
        return h * x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [LRN_SIZE]
