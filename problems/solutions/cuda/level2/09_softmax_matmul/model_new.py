import torch
import torch.nn as nn
from kagent_ext import ops

CHUNK_BYTES = 16 << 20  # probabilities per chunk: they stay in L2 between the softmax and the GEMM


class ModelNew(nn.Module):
    """softmax(scores) @ values: per L2-sized chunk of batches, a warp-per-row softmax into a
    scratch buffer, then cuBLAS multiplies it by the values while it is in L2."""

    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        b, s, _ = scores.shape
        d = values.shape[2]
        chunk = max(1, min(b, CHUNK_BYTES // (s * s * 4)))
        scratch = scores.new_empty((chunk, s, s))
        out = values.new_empty((b, s, d))
        ops.softmax_bmm(scores, values, scratch, out, b, s, d, chunk)
        return out
