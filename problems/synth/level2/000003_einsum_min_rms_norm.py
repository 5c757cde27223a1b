"""Synthetic problem (kagent synth, seed 0, candidate 3)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 512
FEATURES = 512
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 128}


class Model(nn.Module):
    """x @ x^T -> min over dim 2 -> rms_norm."""

    def __init__(self, seq_len):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(seq_len))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.einsum('bld,bmd->blm', x, x)
        h = torch.min(h, dim=2)[0]
        return F.rms_norm(h, h.shape[-1:], self.norm_weight)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [SEQ_LEN]
