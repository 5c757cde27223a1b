"""Synthetic problem (kagent synth, seed 0, candidate 425)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 64
LRN_SIZE = 3
SMALL_SIZES = {"BATCH": 2, "DEPTH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """local_response_norm -> log_softmax (dim 2) -> cumsum (dim 3)."""

    def __init__(self, lrn_size):
        super().__init__()
        self.lrn_size = lrn_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.local_response_norm(x, self.lrn_size)
        h = torch.log_softmax(h, dim=2)
        return torch.cumsum(h, dim=3)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [LRN_SIZE]
