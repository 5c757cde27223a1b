"""Synthetic problem (kagent synth, seed 0, candidate 512)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
CHANNELS = 16
HEIGHT = 16
WIDTH = 16
OUT_FEATURES = 512
HIDDEN = 32
PAIRWISE_DISTANCE_P = 2.0
NUM_LAYERS = 2


class Model(nn.Module):
    """pairwise_distance -> einsum (HEIGHT -> OUT_FEATURES) -> concat (dim -1) -> RNN -> l1_loss (sum)."""

    def __init__(self, pairwise_distance_p, height, out_features, hidden, num_layers):
        super().__init__()
        self.pairwise_distance_p = pairwise_distance_p
        self.weight = nn.Parameter(torch.randn(height, out_features) / math.sqrt(height))
        self.rnn = nn.RNN(out_features + height, hidden, nonlinearity='relu', batch_first=True, num_layers=num_layers, bidirectional=True)

    def forward(self, x: torch.Tensor, y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h1 = F.pairwise_distance(x, y, p=self.pairwise_distance_p)
        h = torch.einsum('bld,de->ble', h1, self.weight)
        h = torch.cat([h, h1], dim=-1)
        h = self.rnn(h)[0]
        return F.l1_loss(h, target, reduction='sum')


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).exp()
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    target = torch.randn(BATCH, CHANNELS, 2 * HIDDEN)
    return [x, y, target]


def get_init_inputs():
    return [PAIRWISE_DISTANCE_P, HEIGHT, OUT_FEATURES, HIDDEN, NUM_LAYERS]
