import torch
import torch.nn as nn
from kagent_ext import ops

CHUNK_BYTES = 16 << 20  # scores per chunk: kept in L2 between the GEMM and the softmax


class ModelNew(nn.Module):
    """softmax(q @ k^T * scale): per L2-sized chunk of batches, cuBLAS writes the scaled scores and
    a warp-per-row softmax rewrites them in place while they are in L2."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        b, nq, d = q.shape
        s = k.shape[1]
        p = q.new_empty((b, nq, s))
        chunk = max(1, min(b, CHUNK_BYTES // (nq * s * 4)))
        ops.scaled_scores_softmax(q, k, p, b, nq, s, d, float(self.scale), chunk)
        return p
