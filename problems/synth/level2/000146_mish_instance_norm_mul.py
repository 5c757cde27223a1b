"""Synthetic problem (kagent synth, seed 0, candidate 146)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 16
HEIGHT = 256
WIDTH = 256
PAD = [2, 2, 2, 2]
PAD_VALUE = 0.5
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """Mish -> instance_norm -> * (residual) -> cummin (dim -1) -> pad 2 constant."""

    def __init__(self, pad, pad_value):
        super().__init__()
        self.mish = nn.Mish()
        self.pad = pad
        self.pad_value = pad_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.mish(x)
        h = F.instance_norm(h)
        h = h * x
        h = torch.cummin(h, dim=-1)[0]
        return F.pad(h, pad=self.pad, mode='constant', value=self.pad_value)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [PAD, PAD_VALUE]
