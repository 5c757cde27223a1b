"""Synthetic problem (kagent synth, seed 0, candidate 279)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 128
FEATURES = 1024
NUM_HEADS = 4
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 256}


class Model(nn.Module):
    """MultiheadAttention -> transpose(1, 2)."""

    def __init__(self, features, num_heads):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(features, num_heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.multihead_attention(x, x, x, need_weights=False)[0]
        return torch.swapaxes(h, 1, 2)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, NUM_HEADS]
