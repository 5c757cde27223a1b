import torch
import torch.nn as nn
from kagent_ext import ops

CHUNK_BYTES = 16 << 20  # cuBLAS path: scores per chunk, kept in L2 between the GEMM and the softmax


class ModelNew(nn.Module):
    """softmax(q @ k^T * scale). With 256 keys and head_dim a multiple of 16: one fused kernel whose
    blocks hold whole rows of scores in registers (kernels/attn_fused.cu). Otherwise, per L2-sized
    chunk of batches, cuBLAS writes the scaled scores and a warp-per-row softmax rewrites them in
    place while they are in L2 (kernels/attn_probs.cu)."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        b, nq, d = q.shape
        s = k.shape[1]
        p = q.new_empty((b, nq, s))
        if s == 256 and d % 16 == 0:
            ops.attn_probs_fused(q, k, p, b, nq, d, float(self.scale))
            return p
        chunk = max(1, min(b, CHUNK_BYTES // (nq * s * 4)))
        ops.scaled_scores_softmax(q, k, p, b, nq, s, d, float(self.scale), chunk)
        return p
