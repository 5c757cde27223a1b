"""Synthetic problem (kagent synth, seed 0, candidate 331)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 512}


class Model(nn.Module):
    """cosine_similarity -> Softmax (dim -1)."""

    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.cosine_similarity(x, y, dim=1)
        return self.softmax(h)


def get_inputs():
    x = torch.rand(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
