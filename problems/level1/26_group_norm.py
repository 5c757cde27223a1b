import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GroupNorm with learnable per-channel affine."""

    def __init__(self, num_groups: int, num_channels: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 16
features = 64
num_groups = 8
height = 256
width = 256
SMALL_SIZES = {"batch_size": 8, "features": 32, "height": 128, "width": 128}
CHECK_SIZES = {"batch_size": 10, "features": 40, "height": 160, "width": 160}


def get_inputs():
    x = torch.randn(batch_size, features, height, width) * 2.0 + 0.5
    return [x]


def get_init_inputs():
    return [num_groups, features]
