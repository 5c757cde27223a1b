"""Synthetic problem (kagent synth, seed 0, candidate 355)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """mish -> concat (dim -1) -> sum over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.mish(x)
        h = torch.cat([h, x], dim=-1)
        return torch.sum(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
