import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2-D convolution, 3x3 kernel, stride 1, padding 1, with bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
height = 128
width = 128
SMALL_SIZES = {"batch_size": 4, "in_channels": 16, "out_channels": 32, "height": 64, "width": 64}
CHECK_SIZES = {"batch_size": 5, "in_channels": 20, "out_channels": 40, "height": 80, "width": 80}


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
