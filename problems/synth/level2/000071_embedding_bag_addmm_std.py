"""Synthetic problem (kagent synth, seed 0, candidate 71)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 1000
BATCH = 256
SEQ_LEN = 256
EMBED_DIM = 1024
OUT_FEATURES = 2048
PAIRWISE_DISTANCE_P = 1.0
SMALL_SIZES = {"BATCH": 32, "SEQ_LEN": 32, "EMBED_DIM": 128, "OUT_FEATURES": 512}


class Model(nn.Module):
    """EmbeddingBag -> addmm (EMBED_DIM -> OUT_FEATURES) -> std over dim 1 -> pairwise_distance."""

    def __init__(self, vocab_size, embed_dim, out_features, pairwise_distance_p):
        super().__init__()
        self.embedding_bag = nn.EmbeddingBag(vocab_size, embed_dim)
        self.bias = nn.Parameter(torch.randn(out_features))
        self.weight = nn.Parameter(torch.randn(embed_dim, out_features) / math.sqrt(embed_dim))
        self.pairwise_distance_p = pairwise_distance_p

    def forward(self, ids: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.embedding_bag(ids)
        h = torch.addmm(self.bias, h, self.weight)
        h = torch.std(h, dim=1)
        return F.pairwise_distance(h, y, p=self.pairwise_distance_p)


def get_inputs():
    ids = torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))
    y = torch.randn(BATCH)
    return [ids, y]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, OUT_FEATURES, PAIRWISE_DISTANCE_P]
