"""Synthetic problem (kagent synth, seed 0, candidate 477)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 16
HEIGHT = 128
WIDTH = 256
NEGATIVE_SLOPE = 0.2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 64}


class Model(nn.Module):
    """batch_norm (training mode: batch statistics) -> * (residual) -> LeakyReLU -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, negative_slope):
        super().__init__()
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.batch_norm(x, None, None, training=True)
        h2 = h * x
        h = self.leaky_re_lu(h2)
        h = torch.cat([h, h2], dim=1)
        return torch.cat([h, x], dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH).exp()]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
