"""Synthetic problem (kagent synth, seed 0, candidate 483)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 256
OUT_FEATURES = 256
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 128, "FEATURES": 64, "OUT_FEATURES": 64}


class Model(nn.Module):
    """x @ x^T -> linear (SEQ_LEN -> OUT_FEATURES)."""

    def __init__(self, out_features, seq_len):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, seq_len) / math.sqrt(seq_len))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.bmm(x, x.transpose(1, 2))
        return F.linear(h, self.weight, self.bias)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [OUT_FEATURES, SEQ_LEN]
