"""Synthetic problem (kagent synth, seed 0, candidate 60)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 5000
BATCH = 64
SEQ_LEN = 512
EMBED_DIM = 256
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "EMBED_DIM": 64}


class Model(nn.Module):
    """embedding -> scaled_dot_product_attention -> concat (dim -1)."""

    def __init__(self, vocab_size, embed_dim, dtype):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim, dtype=dtype))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h1 = F.embedding(ids, self.embedding)
        h = F.scaled_dot_product_attention(h1, h1, h1, is_causal=True)
        return torch.cat([h, h1], dim=-1)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, DTYPE]
