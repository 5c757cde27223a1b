import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """softmax(x / T): one block per row, row in registers, division fused, one pass."""

    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = float(temperature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        dim = x.shape[-1]
        ops.softmax_temperature(x, y, x.numel() // dim, dim, self.temperature)
        return y
