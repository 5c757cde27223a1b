import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """clamp(gelu(x * scale + bias), -0.5, 2.0) as one fused float4 kernel."""

    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.scale = float(scale)
        self.bias = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        cols = x.shape[-1]
        ops.scale_bias_gelu_clamp(x, self.bias, y, x.numel() // cols, cols, self.scale)
        return y
