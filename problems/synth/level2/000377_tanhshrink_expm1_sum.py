"""Synthetic problem (kagent synth, seed 0, candidate 377)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 1024
NORMALIZE_P = 1.0
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 64}


class Model(nn.Module):
    """tanhshrink -> expm1 -> sum over dim 1 -> normalize (dim -1)."""

    def __init__(self, normalize_p):
        super().__init__()
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.tanhshrink(x)
        h = torch.expm1(h)
        h = torch.sum(h, dim=1, keepdim=True)
        return F.normalize(h, dim=-1, p=self.normalize_p)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [NORMALIZE_P]
