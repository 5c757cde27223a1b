"""Synthetic problem (kagent synth, seed 0, candidate 287)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
NUM_GROUPS = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """GroupNorm -> concat (dim 1) -> clamp_min."""

    def __init__(self, num_groups, channels, dtype):
        super().__init__()
        self.group_norm = nn.GroupNorm(num_groups, channels, dtype=dtype)
        self.scale = nn.Parameter(torch.randn(2 * channels, 1, 1, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.group_norm(x)
        h = torch.cat([h, x], dim=1)
        return torch.clamp_min(h, self.scale)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE).exp()]


def get_init_inputs():
    return [NUM_GROUPS, CHANNELS, DTYPE]
