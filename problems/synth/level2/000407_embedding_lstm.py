"""Synthetic problem (kagent synth, seed 0, candidate 407)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB_SIZE = 10000
BATCH = 16
SEQ_LEN = 64
EMBED_DIM = 256
HIDDEN = 32
NUM_LAYERS = 2


class Model(nn.Module):
    """embedding -> LSTM."""

    def __init__(self, vocab_size, embed_dim, hidden, num_layers):
        super().__init__()
        self.embedding = nn.Parameter(torch.randn(vocab_size, embed_dim))
        self.lstm = nn.LSTM(embed_dim, hidden, batch_first=True, num_layers=num_layers)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = F.embedding(ids, self.embedding)
        return self.lstm(h)[0]


def get_inputs():
    return [torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN))]


def get_init_inputs():
    return [VOCAB_SIZE, EMBED_DIM, HIDDEN, NUM_LAYERS]
