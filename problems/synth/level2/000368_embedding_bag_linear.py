"""Synthetic problem (kagent synth, seed 0, candidate 368)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 1024
SEQ_LEN = 512
EMBED_DIM = 2048
OUT_FEATURES = 8192
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 32, "SEQ_LEN": 32, "EMBED_DIM": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """EmbeddingBag -> Linear (EMBED_DIM -> OUT_FEATURES)."""

    def __init__(self, vocab_size, embed_dim, dtype, out_features):
        super().__init__()
        self.embedding_bag = nn.EmbeddingBag(vocab_size, embed_dim, dtype=dtype)
        self.linear = nn.Linear(embed_dim, out_features, bias=False, dtype=dtype)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embedding_bag(ids)
        return self.linear(h)


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, DTYPE, OUT_FEATURES]
