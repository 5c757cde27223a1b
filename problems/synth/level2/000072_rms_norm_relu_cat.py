"""Synthetic problem (kagent synth, seed 0, candidate 72)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 256, "FEATURES": 1024}


class Model(nn.Module):
    """rms_norm -> relu -> concat (dim 1)."""

    def __init__(self, features, dtype):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(features, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:], self.norm_weight)
        h = F.relu(h)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, DTYPE]
