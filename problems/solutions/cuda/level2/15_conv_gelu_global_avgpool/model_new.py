import torch
import torch.nn as nn
from kagent_ext import ops

CHUNK_BYTES = 16 << 20  # conv output per chunk: it stays in L2 for the gelu + mean epilogue
WORKSPACE_BYTES = 64 << 20  # cuDNN scratch; the caching allocator hands the same block back


class ModelNew(nn.Module):
    """mean(gelu(conv3x3(x) + b)) per channel: per L2-sized chunk of images, cuDNN (FMA math)
    into a scratch buffer, then a block-per-plane bias + gelu + mean that reads it from L2."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.conv.weight.shape[0]
        chunk = max(1, min(n, CHUNK_BYTES // (k * h * w * 4)))
        scratch = x.new_empty((chunk * k * h * w,))
        ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        out = x.new_empty((n, k))
        ops.conv_gelu_avgpool(x, self.conv.weight, self.conv.bias, scratch, ws, out, n, c, h, w, k, chunk,
                              WORKSPACE_BYTES)
        return out
