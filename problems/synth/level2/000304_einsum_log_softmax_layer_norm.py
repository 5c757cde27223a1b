"""Synthetic problem (kagent synth, seed 0, candidate 304)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
OUT_FEATURES = 1024
SMALL_SIZES = {"BATCH": 512, "FEATURES": 256, "OUT_FEATURES": 128}


class Model(nn.Module):
    """einsum (FEATURES -> OUT_FEATURES) -> log_softmax (dim -1) -> layer_norm -> Tanh."""

    def __init__(self, features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.tanh = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.einsum('bi,io->bo', x, self.weight)
        h = F.log_softmax(h, dim=-1)
        h = F.layer_norm(h, h.shape[-1:])
        return self.tanh(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES]
