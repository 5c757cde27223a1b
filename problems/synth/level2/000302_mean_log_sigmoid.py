"""Synthetic problem (kagent synth, seed 0, candidate 302)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 16384
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """mean over dim 1 -> LogSigmoid."""

    def __init__(self):
        super().__init__()
        self.log_sigmoid = nn.LogSigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.mean(x, dim=1)
        return self.log_sigmoid(h)


def get_inputs():
    return [torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return []
