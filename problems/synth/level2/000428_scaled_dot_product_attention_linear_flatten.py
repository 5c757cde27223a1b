"""Synthetic problem (kagent synth, seed 0, candidate 428)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
SEQ_LEN = 512
FEATURES = 512
OUT_FEATURES = 512
OUT_FEATURES_2 = 256
SHIFT = 7
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "FEATURES": 64, "OUT_FEATURES": 128, "OUT_FEATURES_2": 64}


class Model(nn.Module):
    """scaled_dot_product_attention -> Linear (FEATURES -> OUT_FEATURES) -> flatten -> roll (dim -1) -> Linear (SEQ_LEN * OUT_FEATURES -> OUT_FEATURES_2)."""

    def __init__(self, features, out_features, dtype, shift, seq_len, out_features_2):
        super().__init__()
        self.linear = nn.Linear(features, out_features, dtype=dtype)
        self.shift = shift
        self.linear_2 = nn.Linear(seq_len * out_features, out_features_2, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.scaled_dot_product_attention(x, x, x)
        h = self.linear(h)
        h = torch.flatten(h, start_dim=1)
        h = torch.roll(h, shifts=self.shift, dims=-1)
        return self.linear_2(h)


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, OUT_FEATURES, DTYPE, SHIFT, SEQ_LEN, OUT_FEATURES_2]
