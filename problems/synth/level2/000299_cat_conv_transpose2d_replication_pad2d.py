"""Synthetic problem (kagent synth, seed 0, candidate 299)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 3
HEIGHT = 128
WIDTH = 128
OUT_CHANNELS = 8
KERNEL_SIZE = 2
STRIDE = 2
PADDING = 1
LRN_SIZE = 5
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """concat (dim 1) -> conv_transpose2d 2x2 stride 2 -> ReplicationPad2d 1 -> local_response_norm."""

    def __init__(self, channels, out_channels, kernel_size, stride, padding, lrn_size):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2 * channels, out_channels, kernel_size, kernel_size) / math.sqrt((2 * channels) * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.replication_pad2d = nn.ReplicationPad2d(padding=padding)
        self.lrn_size = lrn_size

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cat([x, y], dim=1)
        h = F.conv_transpose2d(h, self.weight, self.bias, stride=self.stride)
        h = self.replication_pad2d(h)
        return F.local_response_norm(h, self.lrn_size)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING, LRN_SIZE]
