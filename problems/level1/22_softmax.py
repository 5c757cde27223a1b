import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Softmax over short rows (256 wide) of a tall matrix."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=self.dim)


batch_size = 262144
dim = 256
softmax_dim = 1
SMALL_SIZES = {"batch_size": 16384}
CHECK_SIZES = {"batch_size": 20480}


def get_inputs():
    x = torch.randn(batch_size, dim) * 2.0
    return [x]


def get_init_inputs():
    return [softmax_dim]
