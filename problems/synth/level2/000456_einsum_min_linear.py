"""Synthetic problem (kagent synth, seed 0, candidate 456)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 2048
OUT_FEATURES = 512
OUT_FEATURES_2 = 2048
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 256, "OUT_FEATURES": 64, "OUT_FEATURES_2": 512}


class Model(nn.Module):
    """einsum (FEATURES -> OUT_FEATURES) -> min over dim 2 -> linear (SEQ_LEN -> OUT_FEATURES_2)."""

    def __init__(self, features, out_features, out_features_2, seq_len):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.weight_2 = nn.Parameter(torch.randn(out_features_2, seq_len) / math.sqrt(seq_len))
        self.bias = nn.Parameter(torch.randn(out_features_2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.einsum('bld,de->ble', x, self.weight)
        h = torch.min(h, dim=2)[0]
        return F.linear(h, self.weight_2, self.bias)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2, SEQ_LEN]
