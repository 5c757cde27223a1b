"""Synthetic problem (kagent synth, seed 0, candidate 481)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1024
FEATURES = 1024
HIDDEN = 128
HIDDEN_2 = 256
SMALL_SIZES = {"BATCH": 256, "FEATURES": 256, "HIDDEN": 64, "HIDDEN_2": 128}


class Model(nn.Module):
    """log_softmax (dim -1) -> - (residual) -> * (residual) -> GRUCell -> RNNCell."""

    def __init__(self, features, hidden, hidden_2):
        super().__init__()
        self.gru_cell = nn.GRUCell(features, hidden)
        self.rnn_cell = nn.RNNCell(hidden, hidden_2, nonlinearity='relu')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.log_softmax(x, dim=-1)
        h = h - x
        h = h * x
        h = self.gru_cell(h)
        return self.rnn_cell(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN, HIDDEN_2]
