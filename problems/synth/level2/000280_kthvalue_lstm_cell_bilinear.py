"""Synthetic problem (kagent synth, seed 0, candidate 280)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
CHANNELS = 16
LENGTH = 16384
HIDDEN = 2048
FEATURES = 64
OUT_FEATURES = 32
K = 1
SMALL_SIZES = {"BATCH": 8, "LENGTH": 1024, "HIDDEN": 32}


class Model(nn.Module):
    """kthvalue over dim 2 -> LSTMCell -> Bilinear (HIDDEN, FEATURES -> OUT_FEATURES) -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, k, channels, hidden, features, out_features):
        super().__init__()
        self.k = k
        self.lstm_cell = nn.LSTMCell(channels, hidden)
        self.bilinear = nn.Bilinear(hidden, features, out_features)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = torch.kthvalue(x, dim=2, k=self.k)[0]
        h = self.lstm_cell(h1)[0]
        h = self.bilinear(h, y)
        h = torch.cat([h, h1], dim=1)
        return torch.cat([h, h1], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, LENGTH)
    y = torch.randn(BATCH, FEATURES)
    return [x, y]


def get_init_inputs():
    return [K, CHANNELS, HIDDEN, FEATURES, OUT_FEATURES]
