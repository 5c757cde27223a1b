"""Synthetic problem (kagent synth, seed 0, candidate 427)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 512
WIDTH = 256
NORM_P = 1
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """airy_ai -> norm over dim 1 -> concat (dim -1) -> log_softmax (dim -1) -> concat (dim -1)."""

    def __init__(self, norm_p):
        super().__init__()
        self.norm_p = norm_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.special.airy_ai(x)
        h2 = torch.norm(h, dim=1, p=self.norm_p)
        h = torch.cat([h2, y], dim=-1)
        h = torch.log_softmax(h, dim=-1)
        return torch.cat([h, h2], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [NORM_P]
