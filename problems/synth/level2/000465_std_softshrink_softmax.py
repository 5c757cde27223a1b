"""Synthetic problem (kagent synth, seed 0, candidate 465)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 1024
WIDTH = 1024
LAMBD = 0.25
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """std over dim 3 -> softshrink -> Softmax (dim 1) -> log_softmax (dim 1)."""

    def __init__(self, lambd):
        super().__init__()
        self.lambd = lambd
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.std(x, dim=3, keepdim=True)
        h = F.softshrink(h, lambd=self.lambd)
        h = self.softmax(h)
        return F.log_softmax(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [LAMBD]
