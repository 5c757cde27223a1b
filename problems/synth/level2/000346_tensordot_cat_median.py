"""Synthetic problem (kagent synth, seed 0, candidate 346)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 256
OUT_FEATURES = 512
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 64, "OUT_FEATURES": 128}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> concat (dim -1) -> median over dim 2 -> softmin (dim 1) -> softmax (dim 1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tensordot(x, self.weight, dims=1)
        h = torch.cat([h, x], dim=-1)
        h = torch.median(h, dim=2, keepdim=True)[0]
        h = F.softmin(h, dim=1)
        return torch.softmax(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
