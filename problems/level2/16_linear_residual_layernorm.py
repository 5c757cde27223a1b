import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Post-norm residual: LayerNorm(x + Linear(x))."""

    def __init__(self, dim: int):
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x + self.linear(x))


batch_size = 8192
dim = 2048
SMALL_SIZES = {"batch_size": 256, "dim": 512}
CHECK_SIZES = {"batch_size": 320, "dim": 640}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
