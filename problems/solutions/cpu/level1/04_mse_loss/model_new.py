import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """MSE as one OpenMP-parallel pass with a double accumulator."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty((), dtype=torch.float32, device=a.device)
        ops.mse_loss(a, b, out, a.numel())
        return out
