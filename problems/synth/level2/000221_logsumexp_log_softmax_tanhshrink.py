"""Synthetic problem (kagent synth, seed 0, candidate 221)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256}


class Model(nn.Module):
    """logsumexp over dim 1 -> log_softmax (dim -1) -> Tanhshrink."""

    def __init__(self):
        super().__init__()
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.logsumexp(x, dim=1)
        h = torch.log_softmax(h, dim=-1)
        return self.tanhshrink(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
