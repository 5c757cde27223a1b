"""Synthetic problem (kagent synth, seed 0, candidate 398)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
SEQ_LEN = 64
FEATURES = 256
HIDDEN = 64
NUM_LAYERS = 2
DTYPE = torch.float16
PRECISION = "fp16"


class Model(nn.Module):
    """GRU -> logsigmoid."""

    def __init__(self, features, hidden, num_layers, dtype):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, num_layers=num_layers, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gru(x)[0]
        return F.logsigmoid(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, HIDDEN, NUM_LAYERS, DTYPE]
