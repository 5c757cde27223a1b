"""Synthetic problem (kagent synth, seed 0, candidate 315)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 8192
POINTS = 2048
NORM_P = 1
ALPHA = 0.5
CDIST_P = 1.0
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256, "POINTS": 128}


class Model(nn.Module):
    """norm over dim 2 -> celu -> cdist -> Tanhshrink -> + (residual)."""

    def __init__(self, norm_p, alpha, cdist_p):
        super().__init__()
        self.norm_p = norm_p
        self.alpha = alpha
        self.cdist_p = cdist_p
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.norm(x, dim=2, p=self.norm_p)
        h = F.celu(h, alpha=self.alpha)
        h3 = torch.cdist(h, y, p=self.cdist_p)
        h = self.tanhshrink(h3)
        return h + h3


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH).exp()
    y = torch.randn(POINTS, CHANNELS)
    return [x, y]


def get_init_inputs():
    return [NORM_P, ALPHA, CDIST_P]
