"""Synthetic problem (kagent synth, seed 0, candidate 411)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512}


class Model(nn.Module):
    """GLU (dim 1) -> concat (dim 1) -> hardswish."""

    def __init__(self):
        super().__init__()
        self.glu = nn.GLU(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.glu(x)
        h = torch.cat([h, x], dim=1)
        return F.hardswish(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return []
