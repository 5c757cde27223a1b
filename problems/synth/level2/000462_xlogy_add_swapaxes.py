"""Synthetic problem (kagent synth, seed 0, candidate 462)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 2048
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """xlogy -> + (residual) -> transpose(1, 2)."""

    def __init__(self, features, dtype):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features, dtype=dtype).exp())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.xlogy(x, self.scale)
        h = h + x
        return torch.swapaxes(h, 1, 2)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, DTYPE]
