"""Synthetic problem (kagent synth, seed 0, candidate 501)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 2048
THRESHOLD = -0.5
VALUE = 0.5
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 256}


class Model(nn.Module):
    """tril -> - (residual) -> std over dim 1 -> Threshold -> log_ndtr."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold = nn.Threshold(threshold=threshold, value=value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tril(x)
        h = h - x
        h = torch.std(h, dim=1, keepdim=True)
        h = self.threshold(h)
        return torch.special.log_ndtr(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [THRESHOLD, VALUE]
