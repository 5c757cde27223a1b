"""Synthetic problem (kagent synth, seed 0, candidate 125)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 1024
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128, "OUT_FEATURES": 128}


class Model(nn.Module):
    """layer_norm -> * (residual) -> concat (dim -1) -> tensordot (2 * FEATURES -> OUT_FEATURES) -> sigmoid."""

    def __init__(self, features, out_features):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(features))
        self.weight = nn.Parameter(torch.randn(2 * features, out_features) / math.sqrt(2 * features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.layer_norm(x, x.shape[-1:], self.norm_weight)
        h = h1 * x
        h = torch.cat([h, h1], dim=-1)
        h = torch.tensordot(h, self.weight, dims=1)
        return torch.sigmoid(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
