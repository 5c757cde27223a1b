"""Synthetic problem (kagent synth, seed 0, candidate 189)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 512
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 64}


class Model(nn.Module):
    """logsigmoid."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.logsigmoid(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
