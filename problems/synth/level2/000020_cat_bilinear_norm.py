"""Synthetic problem (kagent synth, seed 0, candidate 20)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
FEATURES_2 = 32
OUT_FEATURES = 64
NORM_P = 2
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """concat (dim 1) -> Bilinear (2 * FEATURES, FEATURES_2 -> OUT_FEATURES) -> norm over dim 1."""

    def __init__(self, features, features_2, out_features, dtype, norm_p):
        super().__init__()
        self.bilinear = nn.Bilinear(2 * features, features_2, out_features, dtype=dtype)
        self.norm_p = norm_p

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.bilinear(h, y_2)
        return torch.norm(h, dim=1, keepdim=True, p=self.norm_p)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y_2 = torch.randn(BATCH, FEATURES_2, dtype=DTYPE)
    return [x, y, y_2]


def get_init_inputs():
    return [FEATURES, FEATURES_2, OUT_FEATURES, DTYPE, NORM_P]
