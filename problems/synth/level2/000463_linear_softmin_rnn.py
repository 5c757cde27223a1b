"""Synthetic problem (kagent synth, seed 0, candidate 463)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
SEQ_LEN = 128
FEATURES = 64
OUT_FEATURES = 512
HIDDEN = 32
DTYPE = torch.bfloat16
PRECISION = "bf16"


class Model(nn.Module):
    """linear (FEATURES -> OUT_FEATURES) -> Softmin (dim 1) -> RNN -> cummin (dim -1)."""

    def __init__(self, out_features, features, dtype, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, features, dtype=dtype) / math.sqrt(features))
        self.softmin = nn.Softmin(dim=1)
        self.rnn = nn.RNN(out_features, hidden, nonlinearity='tanh', batch_first=True, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, self.weight)
        h = self.softmin(h)
        h = self.rnn(h)[0]
        return torch.cummin(h, dim=-1)[0]


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [OUT_FEATURES, FEATURES, DTYPE, HIDDEN]
