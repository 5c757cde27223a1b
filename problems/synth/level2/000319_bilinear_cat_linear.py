"""Synthetic problem (kagent synth, seed 0, candidate 319)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 16384
FEATURES_2 = 32
OUT_FEATURES = 32
OUT_FEATURES_2 = 2048
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES_2": 128}


class Model(nn.Module):
    """Bilinear (FEATURES, FEATURES_2 -> OUT_FEATURES) -> concat (dim 1) -> Linear (OUT_FEATURES + FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, features, features_2, out_features, dtype, out_features_2):
        super().__init__()
        self.bilinear = nn.Bilinear(features, features_2, out_features, dtype=dtype)
        self.linear = nn.Linear(out_features + features, out_features_2, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.bilinear(x, y)
        h = torch.cat([h, x], dim=1)
        return self.linear(h)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES_2, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [FEATURES, FEATURES_2, OUT_FEATURES, DTYPE, OUT_FEATURES_2]
