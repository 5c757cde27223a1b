"""Synthetic problem (kagent synth, seed 0, candidate 10)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 2048
FEATURES = 1024
OUT_FEATURES = 8192
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 64, "FEATURES": 64, "OUT_FEATURES": 512}


class Model(nn.Module):
    """sum over dim 2 -> Linear (SEQ_LEN -> OUT_FEATURES) -> concat (dim 1) -> nanmedian over dim 1 -> cumsum (dim -1)."""

    def __init__(self, seq_len, out_features, dtype):
        super().__init__()
        self.linear = nn.Linear(seq_len, out_features, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.sum(x, dim=2)
        h = self.linear(h1)
        h = torch.cat([h, h1], dim=1)
        h = torch.nanmedian(h, dim=1)[0]
        return torch.cumsum(h, dim=-1)


def get_inputs():
    return [torch.rand(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [SEQ_LEN, OUT_FEATURES, DTYPE]
