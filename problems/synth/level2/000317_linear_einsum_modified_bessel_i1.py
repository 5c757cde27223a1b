"""Synthetic problem (kagent synth, seed 0, candidate 317)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 1024
OUT_FEATURES = 1024
OUT_FEATURES_2 = 1024
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 128, "OUT_FEATURES": 128, "OUT_FEATURES_2": 128}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> einsum (OUT_FEATURES -> OUT_FEATURES_2) -> modified_bessel_i1 -> + (residual) -> x @ x^T."""

    def __init__(self, features, out_features, out_features_2):
        super().__init__()
        self.linear = nn.Linear(features, out_features)
        self.weight = nn.Parameter(torch.randn(out_features, out_features_2) / math.sqrt(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        h2 = torch.einsum('bld,de->ble', h, self.weight)
        h = torch.special.modified_bessel_i1(h2)
        h = h + h2
        return torch.einsum('bld,bmd->blm', h, h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2]
