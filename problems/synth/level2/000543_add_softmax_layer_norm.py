"""Synthetic problem (kagent synth, seed 0, candidate 543)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ_LEN = 32
FEATURES = 256
HIDDEN = 32
SHIFT = 1.0
DTYPE = torch.float16
PRECISION = "fp16"


class Model(nn.Module):
    """+ -> Softmax (dim 1) -> layer_norm -> RNN."""

    def __init__(self, shift, features, dtype, hidden):
        super().__init__()
        self.shift = shift
        self.softmax = nn.Softmax(dim=1)
        self.norm_weight = nn.Parameter(torch.ones(features, dtype=dtype))
        self.rnn = nn.RNN(features, hidden, nonlinearity='relu', batch_first=True, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.shift
        h = self.softmax(h)
        h = F.layer_norm(h, h.shape[-1:], self.norm_weight)
        return self.rnn(h)[0]


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [SHIFT, FEATURES, DTYPE, HIDDEN]
