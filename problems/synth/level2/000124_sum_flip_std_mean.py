"""Synthetic problem (kagent synth, seed 0, candidate 124)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 1024
FEATURES = 2048
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 64}


class Model(nn.Module):
    """sum over dim 2 -> flip (dim 1) -> std_mean over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.sum(x, dim=2, keepdim=True)
        h = torch.flip(h, dims=[1])
        return torch.std_mean(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
