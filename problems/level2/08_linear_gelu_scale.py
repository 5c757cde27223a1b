import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer, exact GELU, then multiply by a constant scale factor."""

    def __init__(self, in_features: int, out_features: int, scale_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale_factor = scale_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x)) * self.scale_factor


batch_size = 4096
in_features = 2048
out_features = 4096
scale_factor = 2.0
SMALL_SIZES = {"batch_size": 256, "in_features": 512, "out_features": 512}
CHECK_SIZES = {"batch_size": 320, "in_features": 640, "out_features": 640}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale_factor]
