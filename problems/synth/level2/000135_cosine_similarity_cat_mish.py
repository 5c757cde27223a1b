"""Synthetic problem (kagent synth, seed 0, candidate 135)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 128
WIDTH = 64
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """CosineSimilarity -> concat (dim -1) -> mish."""

    def __init__(self):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = self.cosine_similarity(x, y)
        h = torch.cat([h, y_2], dim=-1)
        return F.mish(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y_2 = torch.randn(BATCH, HEIGHT, WIDTH)
    return [x, y, y_2]


def get_init_inputs():
    return []
