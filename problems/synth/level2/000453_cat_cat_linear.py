"""Synthetic problem (kagent synth, seed 0, candidate 453)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 128
FEATURES = 512
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """concat (dim -1) -> concat (dim -1) -> Linear (2 * FEATURES + FEATURES -> OUT_FEATURES)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(2 * features + features, out_features)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=-1)
        h = torch.cat([h, x], dim=-1)
        return self.linear(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
