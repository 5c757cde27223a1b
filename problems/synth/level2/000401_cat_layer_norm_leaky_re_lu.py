"""Synthetic problem (kagent synth, seed 0, candidate 401)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 2048
OUT_FEATURES = 1024
NEGATIVE_SLOPE = 0.1
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128, "OUT_FEATURES": 64}


class Model(nn.Module):
    """concat (dim -1) -> LayerNorm -> LeakyReLU -> linear (2 * FEATURES -> OUT_FEATURES) -> concat (dim -1)."""

    def __init__(self, features, dtype, negative_slope, out_features):
        super().__init__()
        self.layer_norm = nn.LayerNorm(2 * features, dtype=dtype)
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)
        self.weight = nn.Parameter(torch.randn(out_features, 2 * features, dtype=dtype) / math.sqrt(2 * features))
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=-1)
        h = self.layer_norm(h)
        h3 = self.leaky_re_lu(h)
        h = F.linear(h3, self.weight, self.bias)
        return torch.cat([h, h3], dim=-1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [FEATURES, DTYPE, NEGATIVE_SLOPE, OUT_FEATURES]
