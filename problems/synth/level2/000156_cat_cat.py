"""Synthetic problem (kagent synth, seed 0, candidate 156)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 2048
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """concat (dim -1) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=-1)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
