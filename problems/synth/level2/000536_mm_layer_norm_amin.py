"""Synthetic problem (kagent synth, seed 0, candidate 536)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 2048
OUT_FEATURES = 4096
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """mm (FEATURES -> OUT_FEATURES) -> layer_norm -> amin over dim 1."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))
        self.norm_weight = nn.Parameter(torch.ones(out_features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)
        h = F.layer_norm(h, h.shape[-1:], self.norm_weight)
        return torch.amin(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
