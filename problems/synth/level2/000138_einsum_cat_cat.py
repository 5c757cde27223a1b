"""Synthetic problem (kagent synth, seed 0, candidate 138)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 4096
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES": 256}


class Model(nn.Module):
    """einsum (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> concat (dim 1) -> ReLU -> softmax (dim -1)."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.re_lu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.einsum('bi,io->bo', x, self.weight)
        h = torch.cat([h1, x], dim=1)
        h = torch.cat([h, h1], dim=1)
        h = self.re_lu(h)
        return torch.softmax(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
