import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2-D average pooling, 3x3 window, stride 1, padding 1 (zero padding counted)."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
channels = 64
height = 256
width = 256
kernel_size = 3
stride = 1
padding = 1
SMALL_SIZES = {"batch_size": 4, "channels": 16, "height": 128, "width": 128}
CHECK_SIZES = {"batch_size": 5, "channels": 20, "height": 160, "width": 160}


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
