"""Synthetic problem (kagent synth, seed 0, candidate 95)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 512
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 64}


class Model(nn.Module):
    """concat (dim -1) -> concat (dim -1) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=-1)
        h = torch.cat([h, x], dim=-1)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return []
