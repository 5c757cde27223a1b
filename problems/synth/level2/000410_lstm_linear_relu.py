"""Synthetic problem (kagent synth, seed 0, candidate 410)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
SEQ_LEN = 128
FEATURES = 64
HIDDEN = 128
OUT_FEATURES = 512
OUT_FEATURES_2 = 64
DTYPE = torch.bfloat16
PRECISION = "bf16"


class Model(nn.Module):
    """LSTM -> Linear (HIDDEN -> OUT_FEATURES) -> relu -> Linear (OUT_FEATURES -> OUT_FEATURES_2) -> concat (dim -1)."""

    def __init__(self, features, hidden, dtype, out_features, out_features_2):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True, dtype=dtype)
        self.linear = nn.Linear(hidden, out_features, dtype=dtype)
        self.linear_2 = nn.Linear(out_features, out_features_2, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lstm(x)[0]
        h = self.linear(h)
        h = F.relu(h)
        h = self.linear_2(h)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, HIDDEN, DTYPE, OUT_FEATURES, OUT_FEATURES_2]
