"""Synthetic problem (kagent synth, seed 0, candidate 437)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
CHANNELS = 32
LENGTH = 16384
NORMALIZE_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 16, "LENGTH": 256}


class Model(nn.Module):
    """normalize (dim -1)."""

    def __init__(self, normalize_p):
        super().__init__()
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=-1, p=self.normalize_p)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE).exp()]


def get_init_inputs():
    return [NORMALIZE_P]
