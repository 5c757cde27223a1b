import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Log-softmax over long rows (16384 wide)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 4096
dim = 16384
softmax_dim = 1
SMALL_SIZES = {"batch_size": 512, "dim": 8192}
CHECK_SIZES = {"batch_size": 640, "dim": 10240}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [softmax_dim]
