import torch
import torch.nn as nn
from kagent_ext import ops

WORKSPACE_BYTES = 64 << 20  # cuDNN scratch; the caching allocator hands the same block back


class ModelNew(nn.Module):
    """mean(gelu(conv3x3(x) + b)) per channel: one whole-batch cuDNN convolution (FMA math, no bias,
    the fastest exact algorithm measured once per shape) into a scratch buffer, then one
    block-per-plane pass that adds the bias, applies the exact gelu and averages, reading it once."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.conv.weight.shape[0]
        y = x.new_empty((n * k * h * w,))
        ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        out = x.new_empty((n, k))
        ops.conv_gelu_avgpool(x, self.conv.weight, self.conv.bias, y, ws, out, n, c, h, w, k, WORKSPACE_BYTES)
        return out
