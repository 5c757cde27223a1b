"""Synthetic problem (kagent synth, seed 0, candidate 141)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 8192
MARGIN = 0.5
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256}


class Model(nn.Module):
    """margin_ranking_loss (sum)."""

    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, x: torch.Tensor, other: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.margin_ranking_loss(x, other, target, reduction='sum', margin=self.margin)


def get_inputs():
    x = torch.randn(BATCH, FEATURES)
    other = torch.randn(BATCH, FEATURES)
    target = torch.randn(BATCH, FEATURES).sign()
    return [x, other, target]


def get_init_inputs():
    return [MARGIN]
