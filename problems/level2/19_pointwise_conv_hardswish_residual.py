import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Residual 1x1 convolution: x + hardswish(conv1x1(x))."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.hardswish(self.conv(x))


batch_size = 32
channels = 128
height = 128
width = 128
SMALL_SIZES = {"batch_size": 4, "channels": 64, "height": 64, "width": 64}
CHECK_SIZES = {"batch_size": 5, "channels": 80, "height": 80, "width": 80}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
