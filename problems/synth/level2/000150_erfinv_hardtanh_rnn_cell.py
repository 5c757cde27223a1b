"""Synthetic problem (kagent synth, seed 0, candidate 150)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 16384
HIDDEN = 1024
MIN_VAL = -2.0
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 64, "FEATURES": 512, "HIDDEN": 64}


class Model(nn.Module):
    """erfinv -> Hardtanh -> RNNCell."""

    def __init__(self, min_val, max_val, features, hidden):
        super().__init__()
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)
        self.rnn_cell = nn.RNNCell(features, hidden, nonlinearity='relu')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.erfinv(x)
        h = self.hardtanh(h)
        return self.rnn_cell(h)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL, FEATURES, HIDDEN]
