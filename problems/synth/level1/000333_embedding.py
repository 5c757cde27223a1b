"""Synthetic problem (kagent synth, seed 0, candidate 333)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 5000
BATCH = 128
SEQ_LEN = 1024
EMBED_DIM = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 128, "EMBED_DIM": 128}


class Model(nn.Module):
    """embedding."""

    def __init__(self, vocab_size, embed_dim):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.embedding)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM]
