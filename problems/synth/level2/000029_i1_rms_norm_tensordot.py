"""Synthetic problem (kagent synth, seed 0, candidate 29)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 512
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 128, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """i1 -> rms_norm -> tensordot (FEATURES -> OUT_FEATURES) -> concat (dim -1) -> concat (dim -1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.special.i1(x)
        h = F.rms_norm(h1, h1.shape[-1:])
        h3 = torch.tensordot(h, self.weight, dims=1)
        h = torch.cat([h3, h1], dim=-1)
        return torch.cat([h, h3], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
