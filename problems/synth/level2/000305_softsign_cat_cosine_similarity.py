"""Synthetic problem (kagent synth, seed 0, candidate 305)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 1024
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "SEQ_LEN": 32, "FEATURES": 64}


class Model(nn.Module):
    """softsign -> concat (dim -1) -> cosine_similarity -> remainder -> layer_norm."""

    def __init__(self, seq_len, dtype):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(seq_len, dtype=dtype).exp())
        self.norm_weight = nn.Parameter(torch.ones(seq_len, dtype=dtype))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.softsign(x)
        h = torch.cat([h, x], dim=-1)
        h = F.cosine_similarity(h, y, dim=-1)
        h = torch.remainder(h, self.scale)
        return F.layer_norm(h, h.shape[-1:], self.norm_weight)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, SEQ_LEN, 2 * FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [SEQ_LEN, DTYPE]
