"""Synthetic problem (kagent synth, seed 0, candidate 216)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 2048
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """permute(0, 2, 1) -> nanmedian over dim 2 -> mean over dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.permute(x, [0, 2, 1])
        h = torch.nanmedian(h, dim=2)[0]
        return torch.mean(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
