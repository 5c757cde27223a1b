import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ResNet basic block (3x3 conv-BN-ReLU, 3x3 conv-BN, identity add, ReLU); BN in training mode."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + x)


batch_size = 32
channels = 64
height = 56
width = 56
SMALL_SIZES = {"batch_size": 4, "channels": 16, "height": 32, "width": 32}
CHECK_SIZES = {"batch_size": 5, "channels": 20, "height": 40, "width": 40}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
