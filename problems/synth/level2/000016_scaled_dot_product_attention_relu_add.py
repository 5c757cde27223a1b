"""Synthetic problem (kagent synth, seed 0, candidate 16)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 1024
MEMORY_LEN = 128
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 128, "FEATURES": 256, "MEMORY_LEN": 32}


class Model(nn.Module):
    """scaled_dot_product_attention (cross) -> relu -> + -> SELU -> - (residual)."""

    def __init__(self, features, dtype):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features, dtype=dtype))
        self.selu = nn.SELU()

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = F.scaled_dot_product_attention(x, memory, memory)
        h2 = torch.relu(h)
        h = h2 + self.bias
        h = self.selu(h)
        return h - h2


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES, dtype=DTYPE)
    return [x, memory]


def get_init_inputs():
    return [FEATURES, DTYPE]
