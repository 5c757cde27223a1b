"""Synthetic problem (kagent synth, seed 0, candidate 46)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
COLS = 1024
OUT_FEATURES = 2048
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 32, "WIDTH": 32, "COLS": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """concat (dim 1) -> LayerNorm -> amin over dim 1 -> einsum (WIDTH -> COLS) -> einsum (COLS -> OUT_FEATURES)."""

    def __init__(self, width, dtype, cols, out_features):
        super().__init__()
        self.layer_norm = nn.LayerNorm(width, elementwise_affine=False, dtype=dtype)
        self.weight = nn.Parameter(torch.randn(cols, out_features, dtype=dtype) / math.sqrt(cols))

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = self.layer_norm(h)
        h = torch.amin(h, dim=1)
        h = torch.einsum('bld,bde->ble', h, y_2)
        return torch.einsum('bld,de->ble', h, self.weight)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y_2 = torch.randn(BATCH, WIDTH, COLS, dtype=DTYPE)
    return [x, y, y_2]


def get_init_inputs():
    return [WIDTH, DTYPE, COLS, OUT_FEATURES]
