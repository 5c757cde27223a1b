"""Synthetic problem (kagent synth, seed 0, candidate 464)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 8192
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256}


class Model(nn.Module):
    """i1e -> tanhshrink -> concat (dim 1) -> concat (dim 1) -> var over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.special.i1e(x)
        h = F.tanhshrink(h1)
        h = torch.cat([h, x], dim=1)
        h = torch.cat([h, h1], dim=1)
        return torch.var(h, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return []
