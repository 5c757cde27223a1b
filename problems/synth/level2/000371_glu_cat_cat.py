"""Synthetic problem (kagent synth, seed 0, candidate 371)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """GLU (dim 1) -> concat (dim 1) -> concat (dim 1) -> Softmax (dim -1)."""

    def __init__(self):
        super().__init__()
        self.glu = nn.GLU(dim=1)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.glu(x)
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, x], dim=1)
        return self.softmax(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
