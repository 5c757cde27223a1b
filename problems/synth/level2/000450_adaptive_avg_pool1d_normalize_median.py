"""Synthetic problem (kagent synth, seed 0, candidate 450)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
CHANNELS = 16
LENGTH = 16384
OUTPUT_SIZE = 2
NORMALIZE_P = 1.0
SMALL_SIZES = {"BATCH": 16, "LENGTH": 512}


class Model(nn.Module):
    """AdaptiveAvgPool1d to 2 -> normalize (dim 1) -> median over dim 1."""

    def __init__(self, output_size, normalize_p):
        super().__init__()
        self.adaptive_avg_pool1d = nn.AdaptiveAvgPool1d(output_size=output_size)
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.adaptive_avg_pool1d(x)
        h = F.normalize(h, dim=1, p=self.normalize_p)
        return torch.median(h, dim=1, keepdim=True)[0]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [OUTPUT_SIZE, NORMALIZE_P]
