"""Synthetic problem (kagent synth, seed 0, candidate 443)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 8
HEIGHT = 1024
WIDTH = 512
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """batch_norm (training mode: batch statistics) -> LeakyReLU."""

    def __init__(self):
        super().__init__()
        self.leaky_re_lu = nn.LeakyReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.batch_norm(x, None, None, training=True)
        return self.leaky_re_lu(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
