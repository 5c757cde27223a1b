"""Synthetic problem (kagent synth, seed 0, candidate 286)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 256
FEATURES = 1024
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """softmax (dim 1) -> cosine_similarity."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.softmax(x, dim=1)
        return F.cosine_similarity(h, y, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES).exp()
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return []
