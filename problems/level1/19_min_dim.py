import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Min over the last dimension (values only)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim).values


batch_size = 16384
dim = 4096
reduce_dim = -1
SMALL_SIZES = {"batch_size": 2048, "dim": 2048}
CHECK_SIZES = {"batch_size": 2560, "dim": 2560}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [reduce_dim]
