"""Synthetic problem (kagent synth, seed 0, candidate 290)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 2048
OUT_FEATURES = 4096
BETA = 2.0
SMALL_SIZES = {"BATCH": 128, "FEATURES": 256, "OUT_FEATURES": 512}


class Model(nn.Module):
    """matmul (FEATURES -> OUT_FEATURES) -> CosineSimilarity -> Softplus -> LogSoftmax (dim -1) -> log_softmax (dim -1)."""

    def __init__(self, features, out_features, beta):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.cosine_similarity = nn.CosineSimilarity(dim=1)
        self.softplus = nn.Softplus(beta=beta)
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.matmul(x, self.weight)
        h = self.cosine_similarity(h, y)
        h = self.softplus(h)
        h = self.log_softmax(h)
        return F.log_softmax(h, dim=-1)


def get_inputs():
    x = torch.rand(BATCH, FEATURES)
    y = torch.randn(BATCH, OUT_FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, BETA]
