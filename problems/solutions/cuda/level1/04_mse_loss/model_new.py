import torch
import torch.nn as nn
from kagent_ext import ops

_PARTIALS = 8192  # fp64 per-block partial sums: at most this many blocks in kernel 1 (~10 waves)


class ModelNew(nn.Module):
    """MSE: one streaming pass with fp64 per-block partials, then a 1-block finishing kernel."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        partials = torch.empty(_PARTIALS, dtype=torch.float64, device=a.device)
        out = torch.empty((), dtype=torch.float32, device=a.device)
        ops.mse_loss(a, b, partials, _PARTIALS, out, a.numel())
        return out
