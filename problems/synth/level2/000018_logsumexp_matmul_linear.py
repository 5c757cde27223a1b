"""Synthetic problem (kagent synth, seed 0, candidate 18)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 4096
OUT_FEATURES = 8192
OUT_FEATURES_2 = 1024
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 256, "OUT_FEATURES": 512, "OUT_FEATURES_2": 64}


class Model(nn.Module):
    """logsumexp over dim 1 -> matmul (FEATURES -> OUT_FEATURES) -> linear (OUT_FEATURES -> OUT_FEATURES_2) -> mean over dim 1 -> Softmax (dim 0)."""

    def __init__(self, features, out_features, out_features_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.weight_2 = nn.Parameter(torch.randn(out_features_2, out_features) / math.sqrt(out_features))
        self.softmax = nn.Softmax(dim=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.logsumexp(x, dim=1)
        h = torch.matmul(h, self.weight)
        h = F.linear(h, self.weight_2)
        h = torch.mean(h, dim=1, keepdim=True)
        return self.softmax(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, OUT_FEATURES_2]
