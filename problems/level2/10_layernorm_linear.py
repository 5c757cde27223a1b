import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm over features, then a Linear layer."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.ln = nn.LayerNorm(in_features)
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.ln(x))


batch_size = 8192
in_features = 2048
out_features = 2048
SMALL_SIZES = {"batch_size": 256, "in_features": 512, "out_features": 512}
CHECK_SIZES = {"batch_size": 320, "in_features": 640, "out_features": 640}


def get_inputs():
    return [torch.randn(batch_size, in_features) * 2.0 + 1.0]


def get_init_inputs():
    return [in_features, out_features]
