"""Synthetic problem (kagent synth, seed 0, candidate 480)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 1024
SEQ_LEN = 2048
EMBED_DIM = 2048
OUT_FEATURES = 8192
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 32, "SEQ_LEN": 128, "EMBED_DIM": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """embedding_bag -> tensordot (EMBED_DIM -> OUT_FEATURES)."""

    def __init__(self, vocab_size, embed_dim, dtype, out_features):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim, dtype=dtype))
        self.weight = nn.Parameter(torch.randn(embed_dim, out_features, dtype=dtype) / math.sqrt(embed_dim))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = F.embedding_bag(ids, self.embedding, mode='max')
        return torch.tensordot(h, self.weight, dims=1)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, DTYPE, OUT_FEATURES]
