"""Synthetic problem (kagent synth, seed 0, candidate 525)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
FEATURES = 16384
SHIFT = 1
SMALL_SIZES = {"BATCH": 64, "FEATURES": 1024}


class Model(nn.Module):
    """roll (dim -1) -> Hardtanh -> Softmax (dim -1)."""

    def __init__(self, shift):
        super().__init__()
        self.shift = shift
        self.hardtanh = nn.Hardtanh()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.roll(x, shifts=self.shift, dims=-1)
        h = self.hardtanh(h)
        return self.softmax(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [SHIFT]
