import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-LN GPT-style transformer block: explicit causal softmax attention and a GELU MLP."""

    def __init__(self, dim: int, n_heads: int, mlp_ratio: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.n_heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.n_heads, hd).transpose(1, 2)
        k = k.view(b, t, self.n_heads, hd).transpose(1, 2)
        v = v.view(b, t, self.n_heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x


batch_size = 4
seq_len = 1024
dim = 1024
n_heads = 16
mlp_ratio = 4
SMALL_SIZES = {"batch_size": 2, "seq_len": 128, "dim": 128, "n_heads": 4}
CHECK_SIZES = {"batch_size": 3, "seq_len": 160, "dim": 160}


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, n_heads, mlp_ratio]
