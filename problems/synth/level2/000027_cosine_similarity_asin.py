"""Synthetic problem (kagent synth, seed 0, candidate 27)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 1024
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32, "FEATURES": 256}


class Model(nn.Module):
    """CosineSimilarity -> asin."""

    def __init__(self):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.cosine_similarity(x, y)
        return torch.asin(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return []
