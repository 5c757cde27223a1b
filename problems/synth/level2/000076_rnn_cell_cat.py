"""Synthetic problem (kagent synth, seed 0, candidate 76)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
HIDDEN = 2048
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256, "HIDDEN": 128}


class Model(nn.Module):
    """RNNCell -> concat (dim 1)."""

    def __init__(self, features, hidden):
        super().__init__()
        self.rnn_cell = nn.RNNCell(features, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rnn_cell(x)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
