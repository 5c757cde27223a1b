"""Synthetic problem (kagent synth, seed 0, candidate 308)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
HIDDEN = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024, "HIDDEN": 64}


class Model(nn.Module):
    """RNNCell -> concat (dim 1)."""

    def __init__(self, features, hidden, dtype):
        super().__init__()
        self.rnn_cell = nn.RNNCell(features, hidden, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rnn_cell(x)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, HIDDEN, DTYPE]
