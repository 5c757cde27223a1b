"""Synthetic problem (kagent synth, seed 0, candidate 540)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
NORMALIZE_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """diff (dim -1) -> fmod -> normalize (dim -1) -> - (residual)."""

    def __init__(self, normalize_p):
        super().__init__()
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.diff(x, dim=-1)
        h = torch.fmod(h1, y)
        h = F.normalize(h, dim=-1, p=self.normalize_p)
        return h - h1


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH - 1, dtype=DTYPE).exp()
    return [x, y]


def get_init_inputs():
    return [NORMALIZE_P]
