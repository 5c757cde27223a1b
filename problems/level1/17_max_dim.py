import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max over the outermost dimension (values only)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim).values


dim0 = 512
dim1 = 128
dim2 = 1024
reduce_dim = 0
SMALL_SIZES = {"dim0": 64, "dim1": 64, "dim2": 256}
CHECK_SIZES = {"dim0": 80, "dim1": 80, "dim2": 320}


def get_inputs():
    x = torch.randn(dim0, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
