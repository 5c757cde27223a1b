"""Synthetic problem (kagent synth, seed 0, candidate 531)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
SEQ_LEN = 256
FEATURES = 128
FF_DIM = 256
NUM_HEADS = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 8, "SEQ_LEN": 128, "FEATURES": 64, "FF_DIM": 128}


class Model(nn.Module):
    """TransformerEncoderLayer -> maximum (residual) -> cummax (dim -1) -> concat (dim -1) -> max over dim 1."""

    def __init__(self, features, num_heads, ff_dim, dtype):
        super().__init__()
        self.transformer_encoder_layer = nn.TransformerEncoderLayer(features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='relu', norm_first=True, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.transformer_encoder_layer(x)
        h = torch.maximum(h, x)
        h = torch.cummax(h, dim=-1)[0]
        h = torch.cat([h, x], dim=-1)
        return torch.max(h, dim=1)[0]


def get_inputs():
    return [torch.randn(BATCH, SEQ_LEN, FEATURES, dtype=DTYPE)]


def get_init_inputs():
    return [FEATURES, NUM_HEADS, FF_DIM, DTYPE]
