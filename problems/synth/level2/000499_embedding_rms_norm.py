"""Synthetic problem (kagent synth, seed 0, candidate 499)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 5000
BATCH = 256
SEQ_LEN = 256
EMBED_DIM = 512
SMALL_SIZES = {"BATCH": 32, "SEQ_LEN": 64, "EMBED_DIM": 128}


class Model(nn.Module):
    """embedding -> rms_norm."""

    def __init__(self, vocab_size, embed_dim):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim))
        self.norm_weight = nn.Parameter(torch.ones(embed_dim))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = F.embedding(ids, self.embedding)
        return F.rms_norm(h, h.shape[-1:], self.norm_weight)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM]
