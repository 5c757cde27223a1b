"""Synthetic problem (kagent synth, seed 0, candidate 492)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 512
SEQ_LEN = 512
EMBED_DIM = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "EMBED_DIM": 64}


class Model(nn.Module):
    """embedding -> softmin (dim 1)."""

    def __init__(self, vocab_size, embed_dim, dtype):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim, dtype=dtype))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = F.embedding(ids, self.embedding)
        return F.softmin(h, dim=1)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, DTYPE]
