"""Synthetic problem (kagent synth, seed 0, candidate 31)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 512
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """scaled_dot_product_attention -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.scaled_dot_product_attention(x, x, x)
        return h + x


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
