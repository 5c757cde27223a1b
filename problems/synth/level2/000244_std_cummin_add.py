"""Synthetic problem (kagent synth, seed 0, candidate 244)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
ALPHA = 0.5
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """std over dim 1 -> cummin (dim 0) -> + (residual) -> ELU."""

    def __init__(self, alpha):
        super().__init__()
        self.elu = nn.ELU(alpha=alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.std(x, dim=1, keepdim=True)
        h = torch.cummin(h1, dim=0)[0]
        h = h + h1
        return self.elu(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [ALPHA]
