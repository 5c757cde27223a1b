"""Synthetic problem (kagent synth, seed 0, candidate 218)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 1024
FEATURES = 1024
OUT_FEATURES = 2048
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """tensordot (FEATURES -> OUT_FEATURES) -> scaled_dot_product_attention -> nanmedian over dim 2 -> std_mean over dim 1."""

    def __init__(self, features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features, dtype=dtype) / math.sqrt(features))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.tensordot(x, self.weight, dims=1)
        h = F.scaled_dot_product_attention(h, h, h, is_causal=True)
        h = torch.nanmedian(h, dim=2)[0]
        return torch.std_mean(h, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE]
