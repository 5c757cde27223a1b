"""Synthetic problem (kagent synth, seed 0, candidate 215)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
LENGTH = 16384
SMALL_SIZES = {"BATCH": 8, "LENGTH": 1024}


class Model(nn.Module):
    """CosineSimilarity -> CosineSimilarity."""

    def __init__(self):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=1)
        self.cosine_similarity_2 = nn.CosineSimilarity(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = self.cosine_similarity(x, y)
        return self.cosine_similarity_2(h, y_2)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, CHANNELS, LENGTH)
    y_2 = torch.randn(BATCH, LENGTH)
    return [x, y, y_2]


def get_init_inputs():
    return []
