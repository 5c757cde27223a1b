"""Synthetic problem (kagent synth, seed 0, candidate 11)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
OUT_FEATURES = 2048
HIDDEN = 512
ALPHA = 2.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024, "OUT_FEATURES": 64, "HIDDEN": 32}


class Model(nn.Module):
    """Linear (FEATURES -> OUT_FEATURES) -> leaky_relu -> celu -> + (residual) -> RNNCell."""

    def __init__(self, features, out_features, dtype, alpha, hidden):
        super().__init__()
        self.linear = nn.Linear(features, out_features, dtype=dtype)
        self.alpha = alpha
        self.rnn_cell = nn.RNNCell(out_features, hidden, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.linear(x)
        h = F.leaky_relu(h1)
        h = F.celu(h, alpha=self.alpha)
        h = h + h1
        return self.rnn_cell(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE, ALPHA, HIDDEN]
