import torch
import torch.nn as nn
from kagent_ext import ops

WORKSPACE_BYTES = 32 << 20  # cuBLASLt scratch; the caching allocator hands the same block back


class ModelNew(nn.Module):
    """relu(x @ W^T + b) as one cuBLASLt matmul with the bias+ReLU epilogue (fp32 compute)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m, k = x.shape
        n = self.linear.weight.shape[0]
        y = x.new_empty((m, n))
        ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        ops.linear_bias_relu(x, self.linear.weight, self.linear.bias, y, ws, m, n, k, WORKSPACE_BYTES)
        return y
