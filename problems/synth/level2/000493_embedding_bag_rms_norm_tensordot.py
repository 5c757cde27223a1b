"""Synthetic problem (kagent synth, seed 0, candidate 493)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 1000
BATCH = 128
SEQ_LEN = 2048
EMBED_DIM = 2048
OUT_FEATURES = 512
EPS = 1e-06
DIVISOR = 8.0
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "EMBED_DIM": 256, "OUT_FEATURES": 64}


class Model(nn.Module):
    """EmbeddingBag -> RMSNorm -> tensordot (EMBED_DIM -> OUT_FEATURES) -> layer_norm -> /."""

    def __init__(self, vocab_size, embed_dim, dtype, eps, out_features, divisor):
        super().__init__()
        self.embedding_bag = nn.EmbeddingBag(vocab_size, embed_dim, dtype=dtype)
        self.rms_norm = nn.RMSNorm(embed_dim, eps=eps, dtype=dtype)
        self.weight = nn.Parameter(torch.randn(embed_dim, out_features, dtype=dtype) / math.sqrt(embed_dim))
        self.divisor = divisor

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embedding_bag(ids)
        h = self.rms_norm(h)
        h = torch.tensordot(h, self.weight, dims=1)
        h = F.layer_norm(h, h.shape[-1:])
        return h / self.divisor


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, DTYPE, EPS, OUT_FEATURES, DIVISOR]
