"""Synthetic problem (kagent synth, seed 0, candidate 247)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
SEQ_LEN = 64
FEATURES = 256
HIDDEN = 32
NUM_LAYERS = 2
NORMALIZE_P = 1.0
DTYPE = torch.bfloat16
PRECISION = "bf16"


class Model(nn.Module):
    """GRU -> logsigmoid -> normalize (dim 1) -> concat (dim -1)."""

    def __init__(self, features, hidden, num_layers, dtype, normalize_p):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, num_layers=num_layers, dtype=dtype)
        self.normalize_p = normalize_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gru(x)[0]
        h = F.logsigmoid(h)
        h = F.normalize(h, dim=1, p=self.normalize_p)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, HIDDEN, NUM_LAYERS, DTYPE, NORMALIZE_P]
