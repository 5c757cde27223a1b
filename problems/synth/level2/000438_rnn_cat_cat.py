"""Synthetic problem (kagent synth, seed 0, candidate 438)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
SEQ_LEN = 128
FEATURES = 256
HIDDEN = 128
NUM_LAYERS = 2


class Model(nn.Module):
    """RNN -> concat (dim -1) -> concat (dim -1)."""

    def __init__(self, features, hidden, num_layers):
        super().__init__()
        self.rnn = nn.RNN(features, hidden, nonlinearity='relu', batch_first=True, num_layers=num_layers, bidirectional=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rnn(x)[0]
        h = torch.cat([h, x], dim=-1)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN, NUM_LAYERS]
