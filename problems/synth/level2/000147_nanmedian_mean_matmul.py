"""Synthetic problem (kagent synth, seed 0, candidate 147)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 2048
FEATURES = 1024
COLS = 8192
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 64, "COLS": 512}


class Model(nn.Module):
    """nanmedian over dim 2 -> mean over dim 1 -> matmul (1 -> COLS) -> concat (dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.nanmedian(x, dim=2, keepdim=True)[0]
        h2 = torch.mean(h, dim=1)
        h = torch.matmul(h2, y)
        return torch.cat([h, h2], dim=1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(1, COLS)
    return [x, y]


def get_init_inputs():
    return []
