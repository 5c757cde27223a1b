"""Synthetic problem (kagent synth, seed 0, candidate 54)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
PADDING = 3
NUM_GROUPS = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """ReplicationPad2d 3 -> group_norm -> Softmax2d -> cumprod (dim 1)."""

    def __init__(self, padding, num_groups):
        super().__init__()
        self.replication_pad2d = nn.ReplicationPad2d(padding=padding)
        self.num_groups = num_groups
        self.softmax2d = nn.Softmax2d()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.replication_pad2d(x)
        h = F.group_norm(h, self.num_groups)
        h = self.softmax2d(h)
        return torch.cumprod(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [PADDING, NUM_GROUPS]
