"""Synthetic problem (kagent synth, seed 0, candidate 372)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
HEIGHT = 512
WIDTH = 256
KERNEL_SIZE = 3
STRIDE = 1
NORM_TYPE = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """logaddexp2 -> log_softmax (dim -1) -> ReLU6 -> LPPool2d 3 stride 1 -> clamp_min."""

    def __init__(self, channels, dtype, norm_type, kernel_size, stride):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1, 1, dtype=dtype))
        self.re_lu6 = nn.ReLU6()
        self.lp_pool2d = nn.LPPool2d(norm_type=norm_type, kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.logaddexp2(x, self.scale)
        h = F.log_softmax(h, dim=-1)
        h = self.re_lu6(h)
        h = self.lp_pool2d(h)
        return torch.clamp_min(h, y)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, (HEIGHT - (KERNEL_SIZE - 1) - 1) // STRIDE + 1, (WIDTH - (KERNEL_SIZE - 1) - 1) // STRIDE + 1, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, DTYPE, NORM_TYPE, KERNEL_SIZE, STRIDE]
