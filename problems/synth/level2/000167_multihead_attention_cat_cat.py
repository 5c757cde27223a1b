"""Synthetic problem (kagent synth, seed 0, candidate 167)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 128
FEATURES = 512
NUM_HEADS = 2
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """MultiheadAttention -> concat (dim -1) -> concat (dim -1) -> concat (dim -1)."""

    def __init__(self, features, num_heads):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(features, num_heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.multihead_attention(x, x, x, need_weights=False)[0]
        h = torch.cat([h1, x], dim=-1)
        h = torch.cat([h, x], dim=-1)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, NUM_HEADS]
