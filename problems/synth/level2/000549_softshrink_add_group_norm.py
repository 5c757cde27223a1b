"""Synthetic problem (kagent synth, seed 0, candidate 549)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 16
HEIGHT = 512
WIDTH = 512
LAMBD = 1.0
NUM_GROUPS = 8
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """Softshrink -> + (residual) -> group_norm -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, lambd, num_groups):
        super().__init__()
        self.softshrink = nn.Softshrink(lambd=lambd)
        self.num_groups = num_groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.softshrink(x)
        h = h1 + x
        h = F.group_norm(h, self.num_groups)
        h = torch.cat([h, x], dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [LAMBD, NUM_GROUPS]
