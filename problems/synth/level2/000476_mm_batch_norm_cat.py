"""Synthetic problem (kagent synth, seed 0, candidate 476)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 16384
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024, "OUT_FEATURES": 128}


class Model(nn.Module):
    """mm (FEATURES -> OUT_FEATURES) -> batch_norm (training mode: batch statistics) -> concat (dim 1) -> i0e -> relu6."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, self.weight)
        h = F.batch_norm(h, None, None, training=True)
        h = torch.cat([h, x], dim=1)
        h = torch.special.i0e(h)
        return F.relu6(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES).exp()]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
