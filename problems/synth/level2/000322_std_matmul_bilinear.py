"""Synthetic problem (kagent synth, seed 0, candidate 322)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 2048
COLS = 512
FEATURES_2 = 64
OUT_FEATURES = 32
PAIRWISE_DISTANCE_P = 2.0
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 256, "COLS": 64}


class Model(nn.Module):
    """std over dim 1 -> matmul (FEATURES -> COLS) -> Bilinear (COLS, FEATURES_2 -> OUT_FEATURES) -> pairwise_distance."""

    def __init__(self, cols, features_2, out_features, pairwise_distance_p):
        super().__init__()
        self.bilinear = nn.Bilinear(cols, features_2, out_features)
        self.pairwise_distance_p = pairwise_distance_p

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor, y_3: torch.Tensor) -> torch.Tensor:
        h = torch.std(x, dim=1)
        h = torch.matmul(h, y)
        h = self.bilinear(h, y_2)
        return F.pairwise_distance(h, y_3, p=self.pairwise_distance_p)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(FEATURES, COLS)
    y_2 = torch.randn(BATCH, FEATURES_2)
    y_3 = torch.randn(BATCH, OUT_FEATURES)
    return [x, y, y_2, y_3]


def get_init_inputs():
    return [COLS, FEATURES_2, OUT_FEATURES, PAIRWISE_DISTANCE_P]
