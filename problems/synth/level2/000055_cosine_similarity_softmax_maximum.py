"""Synthetic problem (kagent synth, seed 0, candidate 55)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64, "OUT_FEATURES": 256}


class Model(nn.Module):
    """CosineSimilarity -> Softmax (dim 1) -> maximum (residual) -> Linear (WIDTH -> OUT_FEATURES)."""

    def __init__(self, width, out_features):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=1)
        self.softmax = nn.Softmax(dim=1)
        self.linear = nn.Linear(width, out_features)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = self.cosine_similarity(x, y)
        h = self.softmax(h1)
        h = torch.maximum(h, h1)
        return self.linear(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [WIDTH, OUT_FEATURES]
