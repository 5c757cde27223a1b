import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """RMSNorm: rows in parallel, a sum-of-squares loop and a scaling loop per row."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        dim = x.shape[-1]
        ops.rms_norm(x, self.weight, y, x.numel() // dim, dim, self.eps)
        return y
