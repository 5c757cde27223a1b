import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """LayerNorm + GELU fused: one block per row, row in registers, two-pass stats, one pass."""

    def __init__(self, dim: int):
        super().__init__()
        # Holds norm.weight / norm.bias (same state_dict names as Model); never called.
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        dim = x.shape[-1]
        ops.layernorm_gelu(
            x, self.norm.weight, self.norm.bias, y, x.numel() // dim, dim, float(self.norm.eps)
        )
        return y
