import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Argmax over the middle dimension (int64 indices)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 64
dim1 = 4096
dim2 = 256
reduce_dim = 1
SMALL_SIZES = {"batch_size": 16, "dim1": 1024, "dim2": 256}
CHECK_SIZES = {"batch_size": 20, "dim1": 1280, "dim2": 320}


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
