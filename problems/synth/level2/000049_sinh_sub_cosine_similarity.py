"""Synthetic problem (kagent synth, seed 0, candidate 49)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """sinh -> - (residual) -> CosineSimilarity."""

    def __init__(self):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.sinh(x)
        h = h - x
        return self.cosine_similarity(h, y)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE).exp()
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
