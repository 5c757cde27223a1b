"""Synthetic problem (kagent synth, seed 0, candidate 312)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 4096
HIDDEN = 512
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024, "HIDDEN": 128}


class Model(nn.Module):
    """batch_norm (training mode: batch statistics) -> LSTMCell -> concat (dim 1) -> exp2."""

    def __init__(self, features, hidden, dtype):
        super().__init__()
        self.lstm_cell = nn.LSTMCell(features, hidden, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.batch_norm(x, None, None, training=True)
        h = self.lstm_cell(h)[0]
        h = torch.cat([h, x], dim=1)
        return torch.exp2(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, HIDDEN, DTYPE]
