import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """Pre-norm MLP block in 3 launches: layernorm, fc1+bias+gelu GEMM, fc2+bias+residual GEMM."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        # Same parameter names as Model (norm.*, fc1.*, fc2.*); the modules are never called.
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = x.shape[-1]
        rows = x.numel() // dim
        hidden = self.fc1.weight.shape[0]
        h = x.new_empty((rows, hidden))  # out doubles as the layernorm scratch
        out = torch.empty_like(x)
        ops.mlp_block(
            x, self.norm.weight, self.norm.bias, self.fc1.weight, self.fc1.bias,
            self.fc2.weight, self.fc2.bias, h, out, rows, dim, hidden, float(self.norm.eps),
        )
        return out
