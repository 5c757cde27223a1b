"""Synthetic problem (kagent synth, seed 0, candidate 143)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
SMALL_SIZES = {"BATCH": 128, "FEATURES": 1024}


class Model(nn.Module):
    """xlogy -> cosine_similarity -> cosh -> + (residual) -> logcumsumexp (dim -1)."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features).exp())

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.xlogy(x, self.scale)
        h2 = F.cosine_similarity(h, y, dim=1)
        h = torch.cosh(h2)
        h = h + h2
        return torch.logcumsumexp(h, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [FEATURES]
