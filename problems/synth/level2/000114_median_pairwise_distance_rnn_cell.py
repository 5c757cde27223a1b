"""Synthetic problem (kagent synth, seed 0, candidate 114)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
HEIGHT = 256
WIDTH = 128
HIDDEN = 256
PAIRWISE_DISTANCE_P = 2.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16, "HIDDEN": 32}


class Model(nn.Module):
    """median over dim 1 -> pairwise_distance -> RNNCell."""

    def __init__(self, pairwise_distance_p, height, hidden, dtype):
        super().__init__()
        self.pairwise_distance_p = pairwise_distance_p
        self.rnn_cell = nn.RNNCell(height, hidden, nonlinearity='relu', dtype=dtype)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.median(x, dim=1)[0]
        h = F.pairwise_distance(h, y, p=self.pairwise_distance_p)
        return self.rnn_cell(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, HEIGHT, WIDTH, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [PAIRWISE_DISTANCE_P, HEIGHT, HIDDEN, DTYPE]
