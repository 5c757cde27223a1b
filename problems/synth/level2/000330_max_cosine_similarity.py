"""Synthetic problem (kagent synth, seed 0, candidate 330)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256}


class Model(nn.Module):
    """max over dim 1 -> CosineSimilarity."""

    def __init__(self):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.max(x, dim=1, keepdim=True)[0]
        return self.cosine_similarity(h, y)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, 1)
    return [x, y]


def get_init_inputs():
    return []
