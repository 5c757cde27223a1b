"""Synthetic problem (kagent synth, seed 0, candidate 518)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ_LEN = 64
FEATURES = 128
MEMORY_LEN = 32
FF_DIM = 128
NUM_HEADS = 1


class Model(nn.Module):
    """LayerNorm -> triu -> maximum (residual) -> TransformerDecoderLayer."""

    def __init__(self, features, num_heads, ff_dim):
        super().__init__()
        self.layer_norm = nn.LayerNorm(features)
        self.transformer_decoder_layer = nn.TransformerDecoderLayer(features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='gelu')

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = self.layer_norm(x)
        h = torch.triu(h)
        h = torch.maximum(h, x)
        return self.transformer_decoder_layer(h, memory)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    return [x, memory]


def get_init_inputs():
    return [FEATURES, NUM_HEADS, FF_DIM]
