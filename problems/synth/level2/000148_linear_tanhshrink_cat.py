"""Synthetic problem (kagent synth, seed 0, candidate 148)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 256
FEATURES = 512
OUT_FEATURES = 512
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 64, "OUT_FEATURES": 128}


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> tanhshrink -> concat (dim -1)."""

    def __init__(self, out_features, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.linear(x, self.weight, self.bias)
        h = F.tanhshrink(h1)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES]
