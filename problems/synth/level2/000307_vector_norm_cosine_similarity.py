"""Synthetic problem (kagent synth, seed 0, candidate 307)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 1024
WIDTH = 512
ORD = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """vector_norm over dim 2 -> cosine_similarity."""

    def __init__(self, ord):
        super().__init__()
        self.ord = ord

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.linalg.vector_norm(x, dim=2, ord=self.ord)
        return F.cosine_similarity(h, y, dim=-1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, WIDTH)
    return [x, y]


def get_init_inputs():
    return [ORD]
