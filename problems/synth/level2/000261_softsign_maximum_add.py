"""Synthetic problem (kagent synth, seed 0, candidate 261)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 2048
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """softsign -> maximum (residual) -> + (residual)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.softsign(x)
        h = torch.maximum(h1, x)
        return h + h1


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
