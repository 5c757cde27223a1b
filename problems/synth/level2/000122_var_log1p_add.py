"""Synthetic problem (kagent synth, seed 0, candidate 122)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 1024
FEATURES = 2048
OUT_FEATURES = 2048
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 64, "OUT_FEATURES": 64}


class Model(nn.Module):
    """var over dim 1 -> log1p -> + (residual) -> Linear (FEATURES -> OUT_FEATURES) -> LayerNorm."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.linear = nn.Linear(features, out_features, dtype=dtype)
        self.layer_norm = nn.LayerNorm(out_features, elementwise_affine=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.var(x, dim=1)
        h = torch.log1p(h1)
        h = h + h1
        h = self.linear(h)
        return self.layer_norm(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
