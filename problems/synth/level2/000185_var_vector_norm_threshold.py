"""Synthetic problem (kagent synth, seed 0, candidate 185)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
DEPTH = 128
HEIGHT = 64
WIDTH = 128
ORD = 2
THRESHOLD = 0.5
VALUE = -1.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 16, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """var over dim 4 -> vector_norm over dim [2, 3] -> threshold."""

    def __init__(self, ord, threshold, value):
        super().__init__()
        self.ord = ord
        self.threshold = threshold
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.var(x, dim=4)
        h = torch.linalg.vector_norm(h, dim=[2, 3], keepdim=True, ord=self.ord)
        return F.threshold(h, threshold=self.threshold, value=self.value)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [ORD, THRESHOLD, VALUE]
