"""Synthetic problem (kagent synth, seed 0, candidate 487)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 8192
ALPHA = 0.5
PAIRWISEDISTANCE_P = 1.0
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256}


class Model(nn.Module):
    """CosineSimilarity -> CELU -> PairwiseDistance."""

    def __init__(self, alpha, pairwisedistance_p):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=1)
        self.celu = nn.CELU(alpha=alpha)
        self.pairwise_distance = nn.PairwiseDistance(p=pairwisedistance_p)

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = self.cosine_similarity(x, y)
        h = self.celu(h)
        return self.pairwise_distance(h, y_2)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    y_2 = torch.randn(BATCH)
    return [x, y, y_2]


def get_init_inputs():
    return [ALPHA, PAIRWISEDISTANCE_P]
