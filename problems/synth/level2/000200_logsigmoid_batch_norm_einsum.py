"""Synthetic problem (kagent synth, seed 0, candidate 200)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 16384
OUT_FEATURES = 8192
OUT_FEATURES_2 = 2048
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "OUT_FEATURES": 256, "OUT_FEATURES_2": 128}


class Model(nn.Module):
    """logsigmoid -> batch_norm (training mode: batch statistics) -> einsum (FEATURES -> OUT_FEATURES) -> concat (dim 1) -> linear (OUT_FEATURES + FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, features, out_features, dtype, out_features_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))
        self.weight_2 = nn.Parameter(torch.randn(out_features_2, out_features + features, dtype=dtype) / math.sqrt(out_features + features))
        self.bias = nn.Parameter(torch.randn(out_features_2, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.logsigmoid(x)
        h2 = F.batch_norm(h, None, None, training=True)
        h = torch.einsum('bi,io->bo', h2, self.weight)
        h = torch.cat([h, h2], dim=1)
        return F.linear(h, self.weight_2, self.bias)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE, OUT_FEATURES_2]
