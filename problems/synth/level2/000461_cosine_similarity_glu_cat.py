"""Synthetic problem (kagent synth, seed 0, candidate 461)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 1024
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 128}


class Model(nn.Module):
    """cosine_similarity -> GLU (dim 1) -> concat (dim 1) -> softmax (dim -1) -> maximum (residual)."""

    def __init__(self):
        super().__init__()
        self.glu = nn.GLU(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h1 = F.cosine_similarity(x, y, dim=-1)
        h = self.glu(h1)
        h3 = torch.cat([h, h1], dim=1)
        h = torch.softmax(h3, dim=-1)
        return torch.maximum(h, h3)


def get_inputs():
    x = torch.rand(BATCH, SEQ_LEN, FEATURES)
    y = torch.randn(BATCH, SEQ_LEN, FEATURES)
    return [x, y]


def get_init_inputs():
    return []
