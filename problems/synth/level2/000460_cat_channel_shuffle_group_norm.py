"""Synthetic problem (kagent synth, seed 0, candidate 460)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 16
HEIGHT = 512
WIDTH = 512
GROUPS = 2
NUM_GROUPS = 16
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """concat (dim 1) -> channel shuffle -> group_norm -> min over dim 1."""

    def __init__(self, groups, num_groups):
        super().__init__()
        self.groups = groups
        self.num_groups = num_groups

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = F.channel_shuffle(h, groups=self.groups)
        h = F.group_norm(h, self.num_groups)
        return torch.min(h, dim=1)[0]


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [GROUPS, NUM_GROUPS]
