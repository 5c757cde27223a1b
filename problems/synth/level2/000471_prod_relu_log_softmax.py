"""Synthetic problem (kagent synth, seed 0, candidate 471)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 32
HEIGHT = 512
WIDTH = 256
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """prod over dim 1 -> relu -> LogSoftmax (dim -1)."""

    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.prod(x, dim=1, keepdim=True)
        h = F.relu(h)
        return self.log_softmax(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return []
