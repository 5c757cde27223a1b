"""Synthetic problem (kagent synth, seed 0, candidate 105)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 16384
OUT_FEATURES = 1024
THRESHOLD = 0.5
VALUE = -1.0
MIN_VAL = -2.0
MAX_VAL = 2.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024, "OUT_FEATURES": 128}


class Model(nn.Module):
    """Threshold -> linear (FEATURES -> OUT_FEATURES) -> Hardtanh."""

    def __init__(self, threshold, value, out_features, features, dtype, min_val, max_val):
        super().__init__()
        self.threshold = nn.Threshold(threshold=threshold, value=value)
        self.weight = nn.Parameter(torch.randn(out_features, features, dtype=dtype) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.threshold(x)
        h = F.linear(h, self.weight, self.bias)
        return self.hardtanh(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [THRESHOLD, VALUE, OUT_FEATURES, FEATURES, DTYPE, MIN_VAL, MAX_VAL]
