"""Synthetic problem (kagent synth, seed 0, candidate 126)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
CHANNELS = 3
HEIGHT = 64
WIDTH = 64
HIDDEN = 32
NUM_LAYERS = 2


class Model(nn.Module):
    """cosine_similarity -> concat (dim -1) -> cummax (dim 1) -> LSTM -> hardsigmoid."""

    def __init__(self, width, hidden, num_layers):
        super().__init__()
        self.lstm = nn.LSTM(2 * width, hidden, batch_first=True, num_layers=num_layers)

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_2: torch.Tensor) -> torch.Tensor:
        h = F.cosine_similarity(x, y, dim=1)
        h = torch.cat([h, y_2], dim=-1)
        h = torch.cummax(h, dim=1)[0]
        h = self.lstm(h)[0]
        return F.hardsigmoid(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y_2 = torch.randn(BATCH, HEIGHT, WIDTH)
    return [x, y, y_2]


def get_init_inputs():
    return [WIDTH, HIDDEN, NUM_LAYERS]
