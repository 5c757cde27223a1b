"""Synthetic problem (kagent synth, seed 0, candidate 268)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 3
HEIGHT = 512
WIDTH = 512
KERNEL_SIZE = 2
STRIDE = 1
NORM_TYPE = 2
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """cumsum (dim -1) -> lp_pool2d 2 stride 1."""

    def __init__(self, norm_type, kernel_size, stride):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(x, dim=-1)
        return F.lp_pool2d(h, norm_type=self.norm_type, kernel_size=self.kernel_size, stride=self.stride)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NORM_TYPE, KERNEL_SIZE, STRIDE]
