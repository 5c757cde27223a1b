"""Synthetic problem (kagent synth, seed 0, candidate 79)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 512
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 128, "FEATURES": 256}


class Model(nn.Module):
    """erf -> + (residual) -> scaled_dot_product_attention -> - (residual) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.erf(x)
        h = h1 + x
        h = F.scaled_dot_product_attention(h, h, h, is_causal=True)
        h = h - h1
        return torch.cat([h, x], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES).exp()]


def get_init_inputs():
    return []
