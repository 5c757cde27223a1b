"""Synthetic problem (kagent synth, seed 0, candidate 264)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 16
HEIGHT = 128
WIDTH = 128
LAMBD = 0.25
LRN_SIZE = 2
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """Softshrink -> Mish -> LocalResponseNorm -> mean over dim [2, 3]."""

    def __init__(self, lambd, lrn_size):
        super().__init__()
        self.softshrink = nn.Softshrink(lambd=lambd)
        self.mish = nn.Mish()
        self.local_response_norm = nn.LocalResponseNorm(lrn_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.softshrink(x)
        h = self.mish(h)
        h = self.local_response_norm(h)
        return torch.mean(h, dim=[2, 3], keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [LAMBD, LRN_SIZE]
