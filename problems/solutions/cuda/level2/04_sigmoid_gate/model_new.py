import torch
import torch.nn as nn
from kagent_ext import ops


class ModelNew(nn.Module):
    """sigmoid(a) * tanh(b) + a as one fused float4 element-wise kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        ops.sigmoid_gate(a, b, out, a.numel())
        return out
