"""Synthetic problem (kagent synth, seed 0, candidate 151)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 8192
HIDDEN = 512
PRECISION = "tf32"
SMALL_SIZES = {"BATCH": 128, "FEATURES": 512, "HIDDEN": 32}


class Model(nn.Module):
    """GRUCell -> concat (dim 1) -> modified_bessel_i1."""

    def __init__(self, features, hidden):
        super().__init__()
        self.gru_cell = nn.GRUCell(features, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gru_cell(x)
        h = torch.cat([h, x], dim=1)
        return torch.special.modified_bessel_i1(h)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
