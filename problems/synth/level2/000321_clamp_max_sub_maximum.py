"""Synthetic problem (kagent synth, seed 0, candidate 321)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 16
LENGTH = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "LENGTH": 1024}


class Model(nn.Module):
    """clamp_max -> - (residual) -> maximum (residual) -> NLLLoss (mean)."""

    def __init__(self, channels, dtype):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, dtype=dtype))
        self.nll_loss = nn.NLLLoss(reduction='mean')

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h1 = torch.clamp_max(x, self.scale)
        h = h1 - x
        h = torch.maximum(h, h1)
        return self.nll_loss(h, target)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)
    target = torch.randint(0, CHANNELS, (BATCH, LENGTH))
    return [x, target]


def get_init_inputs():
    return [CHANNELS, DTYPE]
