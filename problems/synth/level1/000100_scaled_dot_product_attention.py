"""Synthetic problem (kagent synth, seed 0, candidate 100)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 512
FEATURES = 1024
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 64, "FEATURES": 256}


class Model(nn.Module):
    """scaled_dot_product_attention."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(x, x, x)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
