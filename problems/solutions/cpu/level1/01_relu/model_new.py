import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """ReLU as one OpenMP-parallel, vectorised pass."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
