import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal multi-head self-attention: fused QKV projection, SDPA, output projection."""

    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


batch_size = 8
seq_len = 1024
dim = 1024
n_heads = 16
SMALL_SIZES = {"batch_size": 2, "seq_len": 128, "dim": 256, "n_heads": 4}
CHECK_SIZES = {"batch_size": 3, "seq_len": 160, "dim": 320}


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, n_heads]
