"""Synthetic problem (kagent synth, seed 0, candidate 364)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 5000
BATCH = 128
SEQ_LEN = 2048
EMBED_DIM = 2048
OUT_FEATURES = 1024
MARGIN = 2.0
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "EMBED_DIM": 256, "OUT_FEATURES": 128}


class Model(nn.Module):
    """EmbeddingBag -> linear (EMBED_DIM -> OUT_FEATURES) -> concat (dim 1) -> TripletMarginLoss (mean)."""

    def __init__(self, vocab_size, embed_dim, out_features, margin):
        super().__init__()
        self.embedding_bag = nn.EmbeddingBag(vocab_size, embed_dim, mode='sum')
        self.weight = nn.Parameter(torch.randn(out_features, embed_dim) / math.sqrt(embed_dim))
        self.triplet_margin_loss = nn.TripletMarginLoss(reduction='mean', margin=margin)

    def forward(self, ids: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        h1 = self.embedding_bag(ids)
        h = F.linear(h1, self.weight)
        h = torch.cat([h, h1], dim=1)
        return self.triplet_margin_loss(h, positive, negative)


def get_inputs():
    ids = torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))
    positive = torch.randn(BATCH, OUT_FEATURES + EMBED_DIM)
    negative = torch.randn(BATCH, OUT_FEATURES + EMBED_DIM)
    return [ids, positive, negative]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, OUT_FEATURES, MARGIN]
