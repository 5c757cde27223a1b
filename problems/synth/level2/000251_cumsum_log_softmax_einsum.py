"""Synthetic problem (kagent synth, seed 0, candidate 251)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 2048
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256, "OUT_FEATURES": 256}


class Model(nn.Module):
    """cumsum (dim -1) -> log_softmax (dim -1) -> einsum (FEATURES -> OUT_FEATURES)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(x, dim=-1)
        h = torch.log_softmax(h, dim=-1)
        return torch.einsum('bi,io->bo', h, self.weight)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
