"""Synthetic problem (kagent synth, seed 0, candidate 12)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
SEQ_LEN = 64
FEATURES = 64
HIDDEN = 128
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 32}


class Model(nn.Module):
    """RNN -> concat (dim -1) -> Tanh -> Softmax (dim 1) -> maximum (residual)."""

    def __init__(self, features, hidden):
        super().__init__()
        self.rnn = nn.RNN(features, hidden, nonlinearity='relu', batch_first=True)
        self.tanh = nn.Tanh()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rnn(x)[0]
        h = torch.cat([h, x], dim=-1)
        h3 = self.tanh(h)
        h = self.softmax(h3)
        return torch.maximum(h, h3)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES).exp()]


def get_init_inputs():
    return [FEATURES, HIDDEN]
