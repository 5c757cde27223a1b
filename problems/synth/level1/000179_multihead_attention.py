"""Synthetic problem (kagent synth, seed 0, candidate 179)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 512
NUM_HEADS = 4
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 64, "FEATURES": 128}


class Model(nn.Module):
    """MultiheadAttention."""

    def __init__(self, features, num_heads):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(features, num_heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.multihead_attention(x, x, x, need_weights=False)[0]


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, NUM_HEADS]
