import torch
import torch.nn as nn
from kagent_ext import ops

CHUNK_BYTES = 16 << 20  # activation per chunk: x and y of a chunk stay in L2 for the epilogue


class ModelNew(nn.Module):
    """x + hardswish(conv1x1(x)): per L2-sized chunk of images, one cuBLAS batched GEMM, then the
    bias + hardswish + residual epilogue in place while the chunk is in L2."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.conv.weight.shape[0]
        out = x.new_empty((n, k, h, w))
        chunk = max(1, min(n, CHUNK_BYTES // (k * h * w * 4)))
        ops.pw_conv_hswish_res(x, self.conv.weight, self.conv.bias, out, n, c, k, h * w, chunk)
        return out
