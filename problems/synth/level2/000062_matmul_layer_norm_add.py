"""Synthetic problem (kagent synth, seed 0, candidate 62)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 8192
COLS = 4096
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024, "COLS": 512}


class Model(nn.Module):
    """matmul (FEATURES -> COLS) -> LayerNorm -> + (residual) -> cummax (dim -1)."""

    def __init__(self, cols):
        super().__init__()
        self.layer_norm = nn.LayerNorm(cols)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.matmul(x, y)
        h = self.layer_norm(h1)
        h = h + h1
        return torch.cummax(h, dim=-1)[0]


def get_inputs():
    x = torch.rand(BATCH, FEATURES)
    y = torch.randn(FEATURES, COLS)
    return [x, y]


def get_init_inputs():
    return [COLS]
