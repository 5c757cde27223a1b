"""Synthetic problem (kagent synth, seed 0, candidate 412)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 512
SEQ_LEN = 1024
EMBED_DIM = 4096
OUT_FEATURES = 8192
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "EMBED_DIM": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """embedding_bag -> concat (dim 1) -> linear (2 * EMBED_DIM -> OUT_FEATURES)."""

    def __init__(self, vocab_size, embed_dim, out_features):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim))
        self.weight = nn.Parameter(torch.randn(out_features, 2 * embed_dim) / math.sqrt(2 * embed_dim))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, ids: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.embedding_bag(ids, self.embedding, mode='max')
        h = torch.cat([h, y], dim=1)
        return F.linear(h, self.weight, self.bias)


def get_inputs():
    ids = torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))
    y = torch.randn(BATCH, EMBED_DIM)
    return [ids, y]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, OUT_FEATURES]
