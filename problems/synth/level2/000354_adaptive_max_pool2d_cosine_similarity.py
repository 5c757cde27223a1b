"""Synthetic problem (kagent synth, seed 0, candidate 354)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 512
WIDTH = 512
OUTPUT_SIZE = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """AdaptiveMaxPool2d to 2 -> CosineSimilarity."""

    def __init__(self, output_size):
        super().__init__()
        self.adaptive_max_pool2d = nn.AdaptiveMaxPool2d(output_size=output_size)
        self.cosine_similarity = nn.CosineSimilarity(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.adaptive_max_pool2d(x)
        return self.cosine_similarity(h, y)


def get_inputs():
    x = torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, OUTPUT_SIZE, OUTPUT_SIZE)
    return [x, y]


def get_init_inputs():
    return [OUTPUT_SIZE]
