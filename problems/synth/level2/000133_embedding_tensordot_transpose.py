"""Synthetic problem (kagent synth, seed 0, candidate 133)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 64
SEQ_LEN = 256
EMBED_DIM = 256
OUT_FEATURES = 2048
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "EMBED_DIM": 64, "OUT_FEATURES": 512}


class Model(nn.Module):
    """embedding -> tensordot (EMBED_DIM -> OUT_FEATURES) -> transpose(1, 2) -> erfc -> concat (dim 1)."""

    def __init__(self, vocab_size, embed_dim, out_features):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim))
        self.weight = nn.Parameter(torch.randn(embed_dim, out_features) / math.sqrt(embed_dim))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = F.embedding(ids, self.embedding)
        h = torch.tensordot(h, self.weight, dims=1)
        h3 = torch.transpose(h, 1, 2)
        h = torch.erfc(h3)
        return torch.cat([h, h3], dim=1)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, OUT_FEATURES]
