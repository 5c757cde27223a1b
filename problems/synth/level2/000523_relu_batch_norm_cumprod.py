"""Synthetic problem (kagent synth, seed 0, candidate 523)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 8
HEIGHT = 256
WIDTH = 256
SCALE_FACTOR = 2
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """relu -> batch_norm (training mode: batch statistics) -> cumprod (dim 1) -> cummin (dim 1) -> upsample x2 bicubic."""

    def __init__(self, scale_factor):
        super().__init__()
        self.upsample = nn.Upsample(scale_factor=scale_factor, mode='bicubic', align_corners=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(x)
        h = F.batch_norm(h, None, None, training=True)
        h = torch.cumprod(h, dim=1)
        h = torch.cummin(h, dim=1)[0]
        return self.upsample(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [SCALE_FACTOR]
