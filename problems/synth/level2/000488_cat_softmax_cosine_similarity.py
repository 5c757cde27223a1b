"""Synthetic problem (kagent synth, seed 0, candidate 488)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 3
HEIGHT = 256
WIDTH = 256
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """concat (dim 1) -> Softmax (dim -1) -> cosine_similarity -> xlogy."""

    def __init__(self, width):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.scale = nn.Parameter(torch.randn(width).exp())

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.softmax(h)
        h = F.cosine_similarity(h, y_2, dim=1)
        return torch.xlogy(h, self.scale)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y_2 = torch.randn(BATCH, 2 * CHANNELS, HEIGHT, WIDTH)
    return [x, y, y_2]


def get_init_inputs():
    return [WIDTH]
