"""Synthetic problem (kagent synth, seed 0, candidate 256)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 4096
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024, "OUT_FEATURES": 256}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> min over dim 1 -> log_softmax (dim 0) -> softmin (dim 0)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        h = torch.min(h, dim=1, keepdim=True)[0]
        h = torch.log_softmax(h, dim=0)
        return F.softmin(h, dim=0)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
