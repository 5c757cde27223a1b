"""Synthetic problem (kagent synth, seed 0, candidate 159)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 512
WIDTH = 512
BETA = 2.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """softmax (dim -1) -> softplus."""

    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.softmax(x, dim=-1)
        return F.softplus(h, beta=self.beta)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [BETA]
