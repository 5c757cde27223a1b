"""Synthetic problem (kagent synth, seed 0, candidate 537)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
FEATURES_2 = 64
OUT_FEATURES = 64
OUT_FEATURES_2 = 512
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256, "OUT_FEATURES_2": 64}


class Model(nn.Module):
    """Bilinear (FEATURES, FEATURES_2 -> OUT_FEATURES) -> Linear (OUT_FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, features, features_2, out_features, out_features_2):
        super().__init__()
        self.bilinear = nn.Bilinear(features, features_2, out_features)
        self.linear = nn.Linear(out_features, out_features_2, bias=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.bilinear(x, y)
        return self.linear(h)


def get_inputs():
    x = torch.rand(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES_2)
    return [x, y]


def get_init_inputs():
    return [FEATURES, FEATURES_2, OUT_FEATURES, OUT_FEATURES_2]
