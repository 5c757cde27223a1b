"""Synthetic problem (kagent synth, seed 0, candidate 188)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
ORD = 2
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """vector_norm over dim 1."""

    def __init__(self, ord):
        super().__init__()
        self.ord = ord

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, dim=1, keepdim=True, ord=self.ord)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [ORD]
