"""Synthetic problem (kagent synth, seed 0, candidate 444)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
NUM_GROUPS = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """triu -> log_softmax (dim -1) -> true_divide -> + (residual) -> group_norm."""

    def __init__(self, channels, num_groups):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1).exp())
        self.num_groups = num_groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.triu(x)
        h2 = F.log_softmax(h, dim=-1)
        h = torch.true_divide(h2, self.scale)
        h = h + h2
        return F.group_norm(h, self.num_groups)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, NUM_GROUPS]
