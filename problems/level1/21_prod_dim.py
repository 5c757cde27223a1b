import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Product over a short middle dimension; inputs lie in [0.95, 1.05] so products stay bounded."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.prod(x, dim=self.dim)


batch_size = 64
dim1 = 32
dim2 = 32768
reduce_dim = 1
SMALL_SIZES = {"batch_size": 16, "dim2": 8192}
CHECK_SIZES = {"batch_size": 20, "dim2": 10240}


def get_inputs():
    x = 0.95 + 0.1 * torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
