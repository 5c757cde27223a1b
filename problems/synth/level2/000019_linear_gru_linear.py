"""Synthetic problem (kagent synth, seed 0, candidate 19)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
SEQ_LEN = 32
FEATURES = 128
OUT_FEATURES = 64
HIDDEN = 128
OUT_FEATURES_2 = 256
OUT_FEATURES_3 = 512
DTYPE = torch.bfloat16
PRECISION = "bf16"


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> GRU -> Linear (HIDDEN -> OUT_FEATURES_2) -> Linear (OUT_FEATURES_2 -> OUT_FEATURES_3) -> concat (dim -1)."""

    def __init__(self, out_features, features, dtype, hidden, out_features_2, out_features_3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features, dtype=dtype) / math.sqrt(features))
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))
        self.gru = nn.GRU(out_features, hidden, batch_first=True, dtype=dtype)
        self.linear = nn.Linear(hidden, out_features_2, dtype=dtype)
        self.linear_2 = nn.Linear(out_features_2, out_features_3, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.linear(x, self.weight, self.bias)
        h = self.gru(h1)[0]
        h = self.linear(h)
        h = self.linear_2(h)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES, DTYPE, HIDDEN, OUT_FEATURES_2, OUT_FEATURES_3]
