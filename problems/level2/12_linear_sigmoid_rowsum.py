import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer, sigmoid, then sum over the output features (one value per row)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(x)).sum(dim=1, keepdim=True)


batch_size = 4096
in_features = 4096
out_features = 1024
SMALL_SIZES = {"batch_size": 256, "in_features": 512, "out_features": 512}
CHECK_SIZES = {"batch_size": 320, "in_features": 640, "out_features": 640}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
