"""Synthetic problem (kagent synth, seed 0, candidate 37)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
CHANNELS = 16
LENGTH = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "LENGTH": 256}


class Model(nn.Module):
    """amax over dim 1 -> NLLLoss (mean)."""

    def __init__(self):
        super().__init__()
        self.nll_loss = nn.NLLLoss(reduction='mean')

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = torch.amax(x, dim=1)
        return self.nll_loss(h, target)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)
    target = torch.randint(0, LENGTH, (BATCH,))
    return [x, target]


def get_init_inputs():
    return []
