import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d 3x3 -> GroupNorm -> SiLU (a diffusion U-Net style block)."""

    def __init__(self, in_channels: int, out_channels: int, num_groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.gn = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.gn(self.conv(x)))


batch_size = 32
in_channels = 32
out_channels = 64
num_groups = 8
height = 128
width = 128
SMALL_SIZES = {"batch_size": 4, "in_channels": 16, "out_channels": 32, "height": 64, "width": 64}
CHECK_SIZES = {"batch_size": 5, "in_channels": 20, "out_channels": 40, "height": 80, "width": 80}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, num_groups]
