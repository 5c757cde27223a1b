"""Synthetic problem (kagent synth, seed 0, candidate 430)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
COLS = 4096
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024, "COLS": 128}


class Model(nn.Module):
    """einsum (FEATURES -> COLS) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.einsum('bi,io->bo', x, y)
        return torch.cat([h, x], dim=1)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(FEATURES, COLS)
    return [x, y]


def get_init_inputs():
    return []
