"""Synthetic problem (kagent synth, seed 0, candidate 86)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 4096
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 256, "OUT_FEATURES": 128}


class Model(nn.Module):
    """std over dim 2 -> einsum (SEQ_LEN -> OUT_FEATURES) -> logcumsumexp (dim -1)."""

    def __init__(self, seq_len, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(seq_len, out_features) / math.sqrt(seq_len))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.std(x, dim=2)
        h = torch.einsum('bi,io->bo', h, self.weight)
        return torch.logcumsumexp(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [SEQ_LEN, OUT_FEATURES]
