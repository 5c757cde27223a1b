"""Synthetic problem (kagent synth, seed 0, candidate 15)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 1024
FEATURES = 2048
COLS = 1024
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 256, "COLS": 128}


class Model(nn.Module):
    """einsum (FEATURES -> COLS)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.einsum('bld,bde->ble', x, y)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, FEATURES, COLS)
    return [x, y]


def get_init_inputs():
    return []
