"""Synthetic problem (kagent synth, seed 0, candidate 327)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
SEQ_LEN = 512
FEATURES = 4096
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 32, "FEATURES": 256}


class Model(nn.Module):
    """selu -> GLU (dim -1) -> concat (dim -1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.selu(x)
        h = F.glu(h, dim=-1)
        return torch.cat([h, x], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return []
