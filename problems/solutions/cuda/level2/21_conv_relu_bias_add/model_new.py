import torch
import torch.nn as nn
from kagent_ext import ops

WORKSPACE_BYTES = 64 << 20  # cuDNN scratch; the caching allocator hands the same block back


class ModelNew(nn.Module):
    """relu(conv3x3(x) + b1) + b2: one whole-batch cuDNN convolution (FMA math, no bias, the fastest
    exact algorithm measured once per shape) into the output, then one in-place float4 pass for the
    conv bias, the relu and the second bias."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.conv.weight.shape[0]
        ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        out = x.new_empty((n, k, h, w))
        ops.conv_relu_bias_add(x, self.conv.weight, self.conv.bias, self.bias, ws, out, n, c, h, w, k,
                               WORKSPACE_BYTES)
        return out
