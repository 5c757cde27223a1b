"""Synthetic problem (kagent synth, seed 0, candidate 166)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
OUT_FEATURES = 2048
OUT_FEATURES_2 = 8192
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16, "OUT_FEATURES": 128, "OUT_FEATURES_2": 512}


class Model(nn.Module):
    """var over dim 1 -> celu -> Linear (WIDTH -> OUT_FEATURES) -> Linear (OUT_FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, width, out_features, dtype, out_features_2):
        super().__init__()
        self.linear = nn.Linear(width, out_features, dtype=dtype)
        self.linear_2 = nn.Linear(out_features, out_features_2, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.var(x, dim=1)
        h = F.celu(h)
        h = self.linear(h)
        return self.linear_2(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [WIDTH, OUT_FEATURES, DTYPE, OUT_FEATURES_2]
