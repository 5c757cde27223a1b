"""Synthetic problem (kagent synth, seed 0, candidate 507)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 16384
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """acos."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.acos(x)


def get_inputs():
    return [torch.rand(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return []
