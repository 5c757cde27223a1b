"""Synthetic problem (kagent synth, seed 0, candidate 226)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 3
HEIGHT = 512
WIDTH = 256
KERNEL_SIZE = 3
SCALE_FACTOR = 2
ALPHA = 1.5
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    """max_pool2d 3 -> upsample x2 bilinear -> max over dim 1 -> ELU -> log_softmax (dim -1)."""

    def __init__(self, kernel_size, scale_factor, alpha):
        super().__init__()
        self.kernel_size = kernel_size
        self.upsampling_bilinear2d = nn.UpsamplingBilinear2d(scale_factor=scale_factor)
        self.elu = nn.ELU(alpha=alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(x, kernel_size=self.kernel_size)
        h = self.upsampling_bilinear2d(h)
        h = torch.max(h, dim=1, keepdim=True)[0]
        h = self.elu(h)
        return F.log_softmax(h, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL_SIZE, SCALE_FACTOR, ALPHA]
