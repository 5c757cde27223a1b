"""Synthetic problem (kagent synth, seed 0, candidate 193)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 16
LENGTH = 4096
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 16, "LENGTH": 512}


class Model(nn.Module):
    """rms_norm -> BatchNorm1d (training mode: batch statistics)."""

    def __init__(self, channels, dtype):
        super().__init__()
        self.batch_norm1d = nn.BatchNorm1d(channels, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.rms_norm(x, x.shape[-1:])
        return self.batch_norm1d(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, DTYPE]
