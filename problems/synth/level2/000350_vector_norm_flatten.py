"""Synthetic problem (kagent synth, seed 0, candidate 350)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 32
HEIGHT = 512
WIDTH = 512
ORD = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """vector_norm over dim 3 -> flatten."""

    def __init__(self, ord):
        super().__init__()
        self.ord = ord

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.linalg.vector_norm(x, dim=3, keepdim=True, ord=self.ord)
        return torch.flatten(h, start_dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [ORD]
