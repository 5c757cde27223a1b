"""Synthetic problem (kagent synth, seed 0, candidate 233)."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 256
OUT_FEATURES = 128
FF_DIM = 256
MIN_VAL = -0.5
MAX_VAL = 2.0
NUM_HEADS = 2
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 128, "OUT_FEATURES": 64, "FF_DIM": 128}


class Model(nn.Module):
    """cummin (dim 1) -> Hardtanh -> tensordot (FEATURES -> OUT_FEATURES) -> TransformerEncoderLayer -> * (residual)."""

    def __init__(self, min_val, max_val, features, out_features, num_heads, ff_dim):
        super().__init__()
        self.hardtanh = nn.Hardtanh(min_val=min_val, max_val=max_val)
        self.weight = nn.Parameter(torch.randn(features, out_features) / math.sqrt(features))
        self.transformer_encoder_layer = nn.TransformerEncoderLayer(out_features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='relu')

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.cummin(x, dim=1)[0]
        h = self.hardtanh(h)
        h3 = torch.tensordot(h, self.weight, dims=1)
        h = self.transformer_encoder_layer(h3)
        return h * h3


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES)]


def get_init_inputs():
    return [MIN_VAL, MAX_VAL, FEATURES, OUT_FEATURES, NUM_HEADS, FF_DIM]
