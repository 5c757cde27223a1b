import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ResNet-style stem convolution: 7x7 kernel, stride 2, padding 3, no bias, 3 input channels."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 7, stride=2, padding=3, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 64
in_channels = 3
out_channels = 64
height = 224
width = 224
SMALL_SIZES = {"batch_size": 4, "out_channels": 32, "height": 128, "width": 128}
CHECK_SIZES = {"batch_size": 5, "out_channels": 40, "height": 160, "width": 160}


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels]
