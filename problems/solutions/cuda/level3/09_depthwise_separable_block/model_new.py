import torch
import torch.nn as nn
from kagent_ext import ops

TILE = 2048  # outputs per depthwise block: a strip of rows of one (n, c) plane
CHUNK_BYTES = 40 << 20  # GEMM input + output per chunk of images: they stay in L2 for the BN2 stats pass
WS_BYTES = 32 << 20  # cuBLAS workspace


def _a256(v: int) -> int:
    return (v + 255) // 256 * 256


def scratch_bytes(n: int, c: int, k: int, hw: int, strips: int, chunk: int) -> int:
    # the layout dsb_forward carves out of one buffer (kernels/dsb.cu)
    return (_a256(WS_BYTES) + _a256(n * c * strips * 16) + _a256(n * k * 16) + _a256(2 * c * 4)
            + _a256(2 * k * 4) + _a256(chunk * c * hw * 4))


def _momentum(bn: nn.BatchNorm2d) -> float:
    return -1.0 if bn.momentum is None else float(bn.momentum)


class ModelNew(nn.Module):
    """Depthwise 3x3 (own shared-memory kernel, BN1 statistics fused) -> BN1 + relu6 -> 1x1 conv as a
    cuBLAS strided-batched GEMM per L2-sized chunk -> BN2 statistics from L2 -> BN2 + relu6 in place."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.dw = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.pw = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.pw.weight.shape[0]
        hw = h * w
        strips = max(1, min(h, -(-hw // TILE)))
        th = -(-h // strips)
        strips = -(-h // th)
        chunk = max(1, min(n, CHUNK_BYTES // ((c + k) * hw * 4)))
        nbytes = scratch_bytes(n, c, k, hw, strips, chunk)
        scratch = torch.empty(nbytes, dtype=torch.uint8, device=x.device)
        out = x.new_empty((n, k, h, w))
        bn1, bn2 = self.bn1, self.bn2
        train1 = bn1.training or bn1.running_mean is None
        train2 = bn2.training or bn2.running_mean is None
        upd1 = bn1.training and bn1.track_running_stats
        upd2 = bn2.training and bn2.track_running_stats
        ops.dsb_forward(
            x, self.dw.weight, bn1.weight, bn1.bias,
            bn1.running_mean if (upd1 or not train1) else None,
            bn1.running_var if (upd1 or not train1) else None,
            bn1.num_batches_tracked if upd1 else None,
            self.pw.weight, bn2.weight, bn2.bias,
            bn2.running_mean if (upd2 or not train2) else None,
            bn2.running_var if (upd2 or not train2) else None,
            bn2.num_batches_tracked if upd2 else None,
            out, scratch, n, c, k, h, w, th, strips, chunk, WS_BYTES, nbytes,
            float(bn1.eps), float(bn2.eps), _momentum(bn1), _momentum(bn2), int(train1), int(train2))
        return out
