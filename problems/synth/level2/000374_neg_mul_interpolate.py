"""Synthetic problem (kagent synth, seed 0, candidate 374)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
PADDING = 1
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """neg -> * (residual) -> upsample x2 nearest -> ReplicationPad2d 1 -> LogSoftmax (dim 1)."""

    def __init__(self, scale_factor, padding):
        super().__init__()
        self.scale_factor = scale_factor
        self.replication_pad2d = nn.ReplicationPad2d(padding=padding)
        self.log_softmax = nn.LogSoftmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.neg(x)
        h = h * x
        h = F.interpolate(h, scale_factor=self.scale_factor, mode='nearest')
        h = self.replication_pad2d(h)
        return self.log_softmax(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE_FACTOR, PADDING]
