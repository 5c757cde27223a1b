import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MobileNet block: depthwise 3x3 conv-BN-ReLU6, pointwise 1x1 conv-BN-ReLU6; BN in training mode."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.dw = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.pw = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu6(self.bn1(self.dw(x)))
        return F.relu6(self.bn2(self.pw(x)))


batch_size = 32
in_channels = 128
out_channels = 256
height = 112
width = 112
SMALL_SIZES = {"batch_size": 4, "in_channels": 32, "out_channels": 64, "height": 32, "width": 32}
CHECK_SIZES = {"batch_size": 5, "in_channels": 40, "out_channels": 80, "height": 40, "width": 40}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
