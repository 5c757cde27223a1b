"""Synthetic problem (kagent synth, seed 0, candidate 93)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 1024
WIDTH = 1024
NUM_HEADS = 2
LAMBD = 0.25
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """nansum over dim 3 -> logcumsumexp (dim -1) -> MultiheadAttention -> permute(0, 2, 1) -> hardshrink."""

    def __init__(self, height, num_heads, dtype, lambd):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(height, num_heads, batch_first=True, dtype=dtype)
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nansum(x, dim=3)
        h = torch.logcumsumexp(h, dim=-1)
        h = self.multihead_attention(h, h, h, need_weights=False)[0]
        h = torch.permute(h, [0, 2, 1])
        return F.hardshrink(h, lambd=self.lambd)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [HEIGHT, NUM_HEADS, DTYPE, LAMBD]
