"""Synthetic problem (kagent synth, seed 0, candidate 394)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 64, "FEATURES": 256}


class Model(nn.Module):
    """GLU (dim 1) -> concat (dim 1) -> cosine_similarity."""

    def __init__(self):
        super().__init__()
        self.glu = nn.GLU(dim=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.glu(x)
        h = torch.cat([h, x], dim=1)
        return F.cosine_similarity(h, y, dim=1)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    y = torch.randn(BATCH, FEATURES // 2 + FEATURES, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return []
