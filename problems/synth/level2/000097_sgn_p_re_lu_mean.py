"""Synthetic problem (kagent synth, seed 0, candidate 97)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
DEPTH = 64
HEIGHT = 64
WIDTH = 128
ORD = 2
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "DEPTH": 8, "HEIGHT": 8, "WIDTH": 16}


class Model(nn.Module):
    """sgn -> PReLU -> mean over dim 3 -> vector_norm over dim [2, 3]."""

    def __init__(self, channels, dtype, ord):
        super().__init__()
        self.p_re_lu = nn.PReLU(num_parameters=channels, dtype=dtype)
        self.ord = ord

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sgn(x)
        h = self.p_re_lu(h)
        h = torch.mean(h, dim=3)
        return torch.linalg.vector_norm(h, dim=[2, 3], ord=self.ord)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [CHANNELS, DTYPE, ORD]
