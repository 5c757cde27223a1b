import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """Swish x * sigmoid(x) as one fused float4 element-wise kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        ops.swish(x, y, x.numel())
        return y
