"""Synthetic problem (kagent synth, seed 0, candidate 259)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 1024
OUT_FEATURES = 1024
OUT_FEATURES_2 = 1024
OUT_FEATURES_3 = 128
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256, "OUT_FEATURES": 512, "OUT_FEATURES_2": 512, "OUT_FEATURES_3": 64}


class Model(nn.Module):
    """floor -> mm (FEATURES -> OUT_FEATURES) -> matmul (OUT_FEATURES -> OUT_FEATURES_2) -> tensordot (OUT_FEATURES_2 -> OUT_FEATURES_3)."""

    def __init__(self, features, out_features, out_features_2, out_features_3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.weight_2 = nn.Parameter(torch.randn(out_features, out_features_2) / math.sqrt(out_features))
        self.weight_3 = nn.Parameter(torch.randn(out_features_2, out_features_3) / math.sqrt(out_features_2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.floor(x)
        h = torch.mm(h, self.weight)
        h = torch.matmul(h, self.weight_2)
        return torch.tensordot(h, self.weight_3, dims=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2, OUT_FEATURES_3]
