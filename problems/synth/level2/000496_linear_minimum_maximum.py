"""Synthetic problem (kagent synth, seed 0, candidate 496)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 512
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> minimum -> maximum (residual) -> CosineSimilarity."""

    def __init__(self, features, out_features):
        super().__init__()
        self.linear = nn.Linear(features, out_features, bias=False)
        self.cosine_similarity = nn.CosineSimilarity(dim=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        h = torch.minimum(h, y)
        h = torch.maximum(h, y)
        return self.cosine_similarity(h, y_2)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES).exp()
    y = torch.randn(BATCH, SEQ_LEN, OUT_FEATURES)
    y_2 = torch.randn(BATCH, SEQ_LEN, OUT_FEATURES)
    return [x, y, y_2]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
