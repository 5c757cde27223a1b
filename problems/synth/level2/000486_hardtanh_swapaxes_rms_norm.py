"""Synthetic problem (kagent synth, seed 0, candidate 486)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 512
FEATURES = 1024
MIN_VAL = -2.0
MAX_VAL = 2.0
NEGATIVE_SLOPE = 0.05
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 64, "FEATURES": 128}


class Model(nn.Module):
    """Hardtanh -> transpose(1, 2) -> rms_norm -> LeakyReLU."""

    def __init__(self, min_val, max_val, negative_slope):
        super().__init__()
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)
        self.leaky_re_lu = nn.LeakyReLU(negative_slope=negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.hardtanh(x)
        h = torch.swapaxes(h, 1, 2)
        h = F.rms_norm(h, h.shape[-1:])
        return self.leaky_re_lu(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL, NEGATIVE_SLOPE]
