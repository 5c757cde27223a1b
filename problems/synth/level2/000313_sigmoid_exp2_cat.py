"""Synthetic problem (kagent synth, seed 0, candidate 313)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 512
WIDTH = 512
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """sigmoid -> exp2 -> concat (dim 1) -> bessel_j1 -> NLLLoss (sum)."""

    def __init__(self):
        super().__init__()
        self.nll_loss = nn.NLLLoss(reduction='sum')

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h1 = torch.sigmoid(x)
        h = torch.exp2(h1)
        h = torch.cat([h, h1], dim=1)
        h = torch.special.bessel_j1(h)
        return self.nll_loss(h, target)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    target = torch.randint(0, 2 * CHANNELS, (BATCH, HEIGHT, WIDTH))
    return [x, target]


def get_init_inputs():
    return []
