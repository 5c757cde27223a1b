"""Synthetic problem (kagent synth, seed 0, candidate 282)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
LENGTH = 8192
NUM_GROUPS = 4
SCALE_FACTOR = 2
LRN_SIZE = 3
SMALL_SIZES = {"BATCH": 8, "LENGTH": 256}


class Model(nn.Module):
    """LogSoftmax (dim -1) -> GroupNorm -> * (residual) -> upsample x2 linear -> LocalResponseNorm."""

    def __init__(self, num_groups, channels, scale_factor, lrn_size):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=-1)
        self.group_norm = nn.GroupNorm(num_groups, channels)
        self.scale_factor = scale_factor
        self.local_response_norm = nn.LocalResponseNorm(lrn_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.log_softmax(x)
        h = self.group_norm(h)
        h = h * x
        h = F.interpolate(h, scale_factor=self.scale_factor, mode='linear')
        return self.local_response_norm(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH).exp()]


def get_init_inputs():
    return [NUM_GROUPS, CHANNELS, SCALE_FACTOR, LRN_SIZE]
