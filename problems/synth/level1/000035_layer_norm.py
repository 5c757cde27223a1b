"""Synthetic problem (kagent synth, seed 0, candidate 35)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 512}


class Model(nn.Module):
    """LayerNorm."""

    def __init__(self, features, dtype):
        super().__init__()
        self.layer_norm = nn.LayerNorm(features, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(x)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, DTYPE]
