"""Synthetic problem (kagent synth, seed 0, candidate 291)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 1024
FEATURES = 1024
MEMORY_LEN = 1024
OUT_FEATURES = 256
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 256, "MEMORY_LEN": 128, "OUT_FEATURES": 64}


class Model(nn.Module):
    """scaled_dot_product_attention (cross) -> linear (FEATURES -> OUT_FEATURES) -> concat (dim -1) -> concat (dim -1) -> Mish."""

    def __init__(self, out_features, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features))
        self.mish = nn.Mish()

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h1 = F.scaled_dot_product_attention(x, memory, memory)
        h2 = F.linear(h1, self.weight, self.bias)
        h = torch.cat([h2, h1], dim=-1)
        h = torch.cat([h, h2], dim=-1)
        return self.mish(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    return [x, memory]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
