import torch
import torch.nn as nn
from kagent_ext import ops

WORKSPACE_BYTES = 64 << 20  # cuDNN scratch; the caching allocator hands the same block back


def _round64(v: int) -> int:
    return (v + 63) // 64 * 64


class ModelNew(nn.Module):
    """relu(batchnorm_eval(conv3x3(x))) with the batch norm folded into the convolution: a tiny kernel
    scales the weights (w * gamma / sqrt(var + eps)) and makes the bias, then ONE whole-batch cuDNN
    convolution (exact fp32 engine through cuDNN's graph API, plan built once per shape), then bias +
    relu in one in-place pass."""

    def __init__(self, in_channels: int, out_channels: int, eps: float = 1e-5):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.conv.weight.shape[0]
        scratch_floats = _round64(k * c * 9) + _round64(k)  # w' | b'
        scratch = x.new_empty((scratch_floats,))
        ws = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        out = x.new_empty((n, k, h, w))
        ops.conv_bn_relu(x, self.conv.weight, self.bn.running_mean, self.bn.running_var, self.bn.weight,
                         self.bn.bias, scratch, ws, out, n, c, h, w, k, float(self.bn.eps), scratch_floats,
                         WORKSPACE_BYTES)
        return out
