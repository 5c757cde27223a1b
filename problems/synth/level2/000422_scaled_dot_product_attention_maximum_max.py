"""Synthetic problem (kagent synth, seed 0, candidate 422)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 1024
FEATURES = 1024
MEMORY_LEN = 128
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 256, "MEMORY_LEN": 32}


class Model(nn.Module):
    """scaled_dot_product_attention (cross) -> maximum (residual) -> max over dim 2 -> xlog1py."""

    def __init__(self, seq_len):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(seq_len).exp())

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = F.scaled_dot_product_attention(x, memory, memory)
        h = torch.maximum(h, x)
        h = torch.max(h, dim=2)[0]
        return torch.special.xlog1py(h, self.scale)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    return [x, memory]


def get_init_inputs():
    return [SEQ_LEN]
