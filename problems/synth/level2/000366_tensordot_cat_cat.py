"""Synthetic problem (kagent synth, seed 0, candidate 366)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 512
FEATURES = 1024
OUT_FEATURES = 2048
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 64, "FEATURES": 128, "OUT_FEATURES": 256}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> concat (dim -1) -> concat (dim -1) -> ReLU6 -> Hardswish."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))
        self.re_lu6 = nn.ReLU6()
        self.hardswish = nn.Hardswish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tensordot(x, self.weight, dims=1)
        h = torch.cat([h, x], dim=-1)
        h = torch.cat([h, x], dim=-1)
        h = self.re_lu6(h)
        return self.hardswish(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
