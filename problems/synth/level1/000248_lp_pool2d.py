"""Synthetic problem (kagent synth, seed 0, candidate 248)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 128
WIDTH = 256
KERNEL_SIZE = 3
STRIDE = 1
NORM_TYPE = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 16, "WIDTH": 32}


class Model(nn.Module):
    """LPPool2d 3 stride 1."""

    def __init__(self, norm_type, kernel_size, stride):
        super().__init__()
        self.lp_pool2d = nn.LPPool2d(norm_type=norm_type, kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lp_pool2d(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NORM_TYPE, KERNEL_SIZE, STRIDE]
