"""Synthetic problem (kagent synth, seed 0, candidate 478)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 5000
BATCH = 128
SEQ_LEN = 128
EMBED_DIM = 512
SMALL_SIZES = {"BATCH": 32, "SEQ_LEN": 64, "EMBED_DIM": 256}


class Model(nn.Module):
    """embedding -> concat (dim -1) -> concat (dim -1) -> concat (dim -1)."""

    def __init__(self, vocab_size, embed_dim):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim))

    def forward(self, ids: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.embedding(ids, self.embedding)
        h2 = torch.cat([h, y], dim=-1)
        h = torch.cat([h2, y], dim=-1)
        return torch.cat([h, h2], dim=-1)


def get_inputs():
    ids = torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))
    y = torch.randn(BATCH, SEQ_LEN, EMBED_DIM)
    return [ids, y]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM]
