import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose2d (4x4, stride 2: 2x upsampling) -> add a per-channel bias -> tanh."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1)
        self.bias = nn.Parameter(0.5 * torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.deconv(x) + self.bias)


batch_size = 16
in_channels = 64
out_channels = 32
height = 128
width = 128
SMALL_SIZES = {"batch_size": 4, "in_channels": 32, "out_channels": 16, "height": 32, "width": 32}
CHECK_SIZES = {"batch_size": 5, "in_channels": 40, "out_channels": 20, "height": 40, "width": 40}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
