import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LeakyReLU with a configurable negative slope."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 8192
dim = 8192
negative_slope = 0.05
SMALL_SIZES = {"batch_size": 2048, "dim": 2048}
CHECK_SIZES = {"batch_size": 2560, "dim": 2560}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [negative_slope]
