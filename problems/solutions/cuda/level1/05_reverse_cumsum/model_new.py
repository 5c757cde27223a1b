import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """Reverse cumsum along dim 1: one block per row, block-wide suffix scan, one pass."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        ops.reverse_cumsum(x, y, x.shape[0], x.shape[1])
        return y
