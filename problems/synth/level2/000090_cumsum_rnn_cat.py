"""Synthetic problem (kagent synth, seed 0, candidate 90)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ_LEN = 32
FEATURES = 256
HIDDEN = 64


class Model(nn.Module):
    """cumsum (dim 1) -> RNN -> concat (dim -1)."""

    def __init__(self, features, hidden):
        super().__init__()
        self.rnn = nn.RNN(features, hidden, nonlinearity='tanh', batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.cumsum(x, dim=1)
        h = self.rnn(h1)[0]
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
