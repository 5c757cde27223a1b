"""Synthetic problem (kagent synth, seed 0, candidate 449)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 8
HEIGHT = 1024
WIDTH = 512
MIN_VAL = -2.0
MAX_VAL = 2.0
SMALL_SIZES = {"BATCH": 2, "HEIGHT": 64, "WIDTH": 64}


class Model(nn.Module):
    """hardtanh -> - (residual) -> + (residual) -> mean over dim [2, 3] -> ReLU."""

    def __init__(self, min_val, max_val):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.re_lu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)
        h = h1 - x
        h = h + h1
        h = torch.mean(h, dim=[2, 3], keepdim=True)
        return self.re_lu(h)


def get_inputs():
    return [torch.rand(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL]
