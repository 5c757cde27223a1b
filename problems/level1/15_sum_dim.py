import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Sum over one dimension, keeping it (size 1)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 64
dim1 = 1024
dim2 = 1024
reduce_dim = 1
SMALL_SIZES = {"batch_size": 16, "dim1": 512, "dim2": 512}
CHECK_SIZES = {"batch_size": 20, "dim1": 640, "dim2": 640}


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
