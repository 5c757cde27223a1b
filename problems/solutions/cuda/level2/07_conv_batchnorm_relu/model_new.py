import torch
import torch.nn as nn
from kagent_ext import ops

CHUNK_BYTES = 16 << 20  # conv output per chunk: it stays in L2 for the batch-norm + relu epilogue
WORKSPACE_BYTES = 64 << 20  # cuDNN scratch; the caching allocator hands the same block back


class ModelNew(nn.Module):
    """relu(batchnorm_eval(conv3x3(x))): per L2-sized chunk of images, cuDNN (FMA math) writes the
    conv into the output and a block-per-plane batch norm + relu rewrites it in place from L2."""

    def __init__(self, in_channels: int, out_channels: int, eps: float = 1e-5):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.conv.weight.shape[0]
        chunk = max(1, min(n, CHUNK_BYTES // (k * h * w * 4)))
        ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        out = x.new_empty((n, k, h, w))
        ops.conv_bn_relu(x, self.conv.weight, self.bn.running_mean, self.bn.running_var, self.bn.weight,
                         self.bn.bias, ws, out, n, c, h, w, k, chunk, float(self.bn.eps), WORKSPACE_BYTES)
        return out
