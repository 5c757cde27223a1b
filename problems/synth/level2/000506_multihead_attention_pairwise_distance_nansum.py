"""Synthetic problem (kagent synth, seed 0, candidate 506)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 2048
MEMORY_LEN = 1024
NUM_HEADS = 1
PAIRWISE_DISTANCE_P = 2.0
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 256, "MEMORY_LEN": 128}


class Model(nn.Module):
    """MultiheadAttention -> pairwise_distance -> nansum over dim 1 -> silu -> Softmin (dim -1)."""

    def __init__(self, features, num_heads, pairwise_distance_p):
        super().__init__()
        self.multihead_attention = nn.MultiheadAttention(features, num_heads, batch_first=True)
        self.pairwise_distance_p = pairwise_distance_p
        self.softmin = nn.Softmin(dim=-1)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.multihead_attention(x, memory, memory, need_weights=False)[0]
        h = F.pairwise_distance(h, y, p=self.pairwise_distance_p)
        h = torch.nansum(h, dim=1)
        h = F.silu(h)
        return self.softmin(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, memory, y]


def get_init_inputs():
    return [FEATURES, NUM_HEADS, PAIRWISE_DISTANCE_P]
