"""Synthetic problem (kagent synth, seed 0, candidate 429)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """concat (dim -1) -> x @ x^T -> GELU -> + (residual)."""

    def __init__(self):
        super().__init__()
        self.gelu = nn.GELU()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=-1)
        h2 = torch.einsum('bld,bmd->blm', h, h)
        h = self.gelu(h2)
        return h + h2


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
