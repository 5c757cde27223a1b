import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d 3x3 -> GELU -> global average pooling -> flatten to (batch, channels)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(self.conv(x))
        return F.adaptive_avg_pool2d(y, 1).flatten(1)


batch_size = 32
in_channels = 32
out_channels = 64
height = 128
width = 128
SMALL_SIZES = {"batch_size": 4, "in_channels": 16, "out_channels": 32, "height": 64, "width": 64}
CHECK_SIZES = {"batch_size": 5, "in_channels": 20, "out_channels": 40, "height": 80, "width": 80}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
