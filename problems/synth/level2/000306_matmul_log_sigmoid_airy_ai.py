"""Synthetic problem (kagent synth, seed 0, candidate 306)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
SEQ_LEN = 1024
FEATURES = 256
NORM_P = 2
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 128, "FEATURES": 64}


class Model(nn.Module):
    """x @ x^T -> LogSigmoid -> airy_ai -> norm over dim 1 -> nanmean over dim 1."""

    def __init__(self, norm_p):
        super().__init__()
        self.log_sigmoid = nn.LogSigmoid()
        self.norm_p = norm_p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.matmul(x, x.transpose(1, 2))
        h = self.log_sigmoid(h)
        h = torch.special.airy_ai(h)
        h = torch.norm(h, dim=1, p=self.norm_p)
        return torch.nanmean(h, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [NORM_P]
