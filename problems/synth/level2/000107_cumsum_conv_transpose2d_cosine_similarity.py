"""Synthetic problem (kagent synth, seed 0, candidate 107)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
OUT_CHANNELS = 8
OUT_FEATURES = 1024
OUT_FEATURES_2 = 2048
KERNEL_SIZE = 2
STRIDE = 2
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 32, "WIDTH": 64, "OUT_FEATURES": 256, "OUT_FEATURES_2": 512}


class Model(nn.Module):
    """cumsum (dim 2) -> conv_transpose2d 2x2 stride 2 -> CosineSimilarity -> tensordot (STRIDE * WIDTH -> OUT_FEATURES) -> Linear (OUT_FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, channels, out_channels, kernel_size, stride, width, out_features, out_features_2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels, out_channels, kernel_size, kernel_size) / math.sqrt(channels * kernel_size * kernel_size))
        self.bias = nn.Parameter(torch.randn(out_channels))
        self.stride = stride
        self.cosine_similarity = nn.CosineSimilarity(dim=1)
        self.weight_2 = nn.Parameter(torch.randn(stride * width, out_features) / math.sqrt(stride * width))
        self.linear = nn.Linear(out_features, out_features_2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.cumsum(x, dim=2)
        h = F.conv_transpose2d(h, self.weight, self.bias, stride=self.stride)
        h = self.cosine_similarity(h, y)
        h = torch.tensordot(h, self.weight_2, dims=1)
        return self.linear(h)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    y = torch.randn(BATCH, OUT_CHANNELS, STRIDE * HEIGHT, STRIDE * WIDTH)
    return [x, y]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, WIDTH, OUT_FEATURES, OUT_FEATURES_2]
