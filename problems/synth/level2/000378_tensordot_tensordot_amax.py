"""Synthetic problem (kagent synth, seed 0, candidate 378)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 2048
OUT_FEATURES = 1024
OUT_FEATURES_2 = 2048
FEATURES_2 = 64
OUT_FEATURES_3 = 64
NORM_P = 2
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 256, "OUT_FEATURES": 128, "OUT_FEATURES_2": 512}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> tensordot (OUT_FEATURES -> OUT_FEATURES_2) -> amax over dim 1 -> Bilinear (OUT_FEATURES_2, FEATURES_2 -> OUT_FEATURES_3) -> norm over dim 1."""

    def __init__(self, features, out_features, out_features_2, features_2, out_features_3, norm_p):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.weight_2 = nn.Parameter(torch.randn(out_features, out_features_2) / math.sqrt(out_features))
        self.bilinear = nn.Bilinear(out_features_2, features_2, out_features_3)
        self.norm_p = norm_p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.tensordot(x, self.weight, dims=1)
        h = torch.tensordot(h, self.weight_2, dims=1)
        h = torch.amax(h, dim=1)
        h = self.bilinear(h, y)
        return torch.norm(h, dim=1, p=self.norm_p)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, FEATURES_2)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2, FEATURES_2, OUT_FEATURES_3, NORM_P]
