"""Synthetic problem (kagent synth, seed 0, candidate 495)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 32
HEIGHT = 256
WIDTH = 256
FF_DIM = 4096
NUM_HEADS = 1
SMALL_SIZES = {"BATCH": 8, "HEIGHT": 16, "WIDTH": 16, "FF_DIM": 512}


class Model(nn.Module):
    """celu -> sum over dim 2 -> cumprod (dim 1) -> TransformerEncoderLayer -> concat (dim -1)."""

    def __init__(self, width, num_heads, ff_dim):
        super().__init__()
        self.transformer_encoder_layer = nn.TransformerEncoderLayer(width, num_heads, dim_feedforward=ff_dim, dropout=0.0, batch_first=True, activation='relu', norm_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.celu(x)
        h = torch.sum(h, dim=2)
        h3 = torch.cumprod(h, dim=1)
        h = self.transformer_encoder_layer(h3)
        return torch.cat([h, h3], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [WIDTH, NUM_HEADS, FF_DIM]
