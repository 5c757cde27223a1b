"""Synthetic problem (kagent synth, seed 0, candidate 7)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
SEQ_LEN = 256
FEATURES = 256
MEMORY_LEN = 128
FF_DIM = 1024
BETA = 0.5
NUM_HEADS = 2
SMALL_SIZES = {"BATCH": 16, "SEQ_LEN": 64, "FEATURES": 64, "MEMORY_LEN": 32, "FF_DIM": 512}


class Model(nn.Module):
    """Softplus -> TransformerDecoderLayer -> flatten."""

    def __init__(self, beta, features, num_heads, ff_dim):
        super().__init__()
        self.softplus = nn.Softplus(beta=beta)
        self.transformer_decoder_layer = nn.TransformerDecoderLayer(features, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='relu')
        self.flatten = nn.Flatten()

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        h = self.softplus(x)
        h = self.transformer_decoder_layer(h, memory)
        return self.flatten(h)


def get_inputs():
    x = torch.randn(BATCH, SEQ_LEN, FEATURES)
    memory = torch.randn(BATCH, MEMORY_LEN, FEATURES)
    return [x, memory]


def get_init_inputs():
    return [BETA, FEATURES, NUM_HEADS, FF_DIM]
