"""Synthetic problem (kagent synth, seed 0, candidate 237)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 1024
FEATURES = 4096
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 128}


class Model(nn.Module):
    """nanmedian over dim 1 -> nanmean over dim 1 -> LogSoftmax (dim 0)."""

    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nanmedian(x, dim=1)[0]
        h = torch.nanmean(h, dim=1, keepdim=True)
        return self.log_softmax(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return []
