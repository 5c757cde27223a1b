"""Synthetic problem (kagent synth, seed 0, candidate 43)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024}


class Model(nn.Module):
    """BatchNorm1d (training mode: batch statistics) -> softmax (dim -1) -> - (residual)."""

    def __init__(self, features, dtype):
        super().__init__()
        self.batch_norm1d = nn.BatchNorm1d(features, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.batch_norm1d(x)
        h = F.softmax(h, dim=-1)
        return h - x


def get_inputs():
    return [torch.rand(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, DTYPE]
