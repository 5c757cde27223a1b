import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """BatchNorm2d in training mode: normalize with batch statistics (running stats are updated)."""

    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 16
features = 64
height = 256
width = 256
SMALL_SIZES = {"batch_size": 8, "features": 32, "height": 128, "width": 128}
CHECK_SIZES = {"batch_size": 10, "features": 40, "height": 160, "width": 160}


def get_inputs():
    x = torch.randn(batch_size, features, height, width) * 2.0 + 0.5
    return [x]


def get_init_inputs():
    return [features]
