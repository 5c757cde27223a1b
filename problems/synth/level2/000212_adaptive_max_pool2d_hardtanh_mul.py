"""Synthetic problem (kagent synth, seed 0, candidate 212)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 16
HEIGHT = 512
WIDTH = 512
OUTPUT_SIZE = 4
MIN_VAL = -0.5
MAX_VAL = 2.0
DTYPE = torch.bfloat16
PRECISION = "bf16"
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    """AdaptiveMaxPool2d to 4 -> hardtanh -> * (residual) -> cummax (dim 1) -> instance_norm."""

    def __init__(self, output_size, min_val, max_val):
        super().__init__()
        self.adaptive_max_pool2d = nn.AdaptiveMaxPool2d(output_size=output_size)
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = self.adaptive_max_pool2d(x)
        h = F.hardtanh(h1, min_val=self.min_val, max_val=self.max_val)
        h = h * h1
        h = torch.cummax(h, dim=1)[0]
        return F.instance_norm(h)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)]


def get_init_inputs():
    return [OUTPUT_SIZE, MIN_VAL, MAX_VAL]
