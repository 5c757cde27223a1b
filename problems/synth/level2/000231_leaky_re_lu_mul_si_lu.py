"""Synthetic problem (kagent synth, seed 0, candidate 231)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 1024
NEGATIVE_SLOPE = 0.2
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 128}


class Model(nn.Module):
    """LeakyReLU -> * (residual) -> SiLU -> * (residual) -> softmax (dim -1)."""

    def __init__(self, negative_slope):
        super().__init__()
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)
        self.si_lu = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.leaky_re_lu(x)
        h2 = h * x
        h = self.si_lu(h2)
        h = h * h2
        return F.softmax(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
