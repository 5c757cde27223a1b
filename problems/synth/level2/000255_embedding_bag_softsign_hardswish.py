"""Synthetic problem (kagent synth, seed 0, candidate 255)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 256
SEQ_LEN = 512
EMBED_DIM = 2048
SMALL_SIZES = {"BATCH": 32, "SEQ_LEN": 64, "EMBED_DIM": 256}


class Model(nn.Module):
    """EmbeddingBag -> softsign -> hardswish -> * (residual) -> concat (dim 1)."""

    def __init__(self, vocab_size, embed_dim):
        super().__init__()
        self.embedding_bag = nn.EmbeddingBag(vocab_size, embed_dim, mode='sum')

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h1 = self.embedding_bag(ids)
        h = F.softsign(h1)
        h = F.hardswish(h)
        h = h * h1
        return torch.cat([h, h1], dim=1)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM]
