import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Token embedding lookup + learned position embedding -> LayerNorm."""

    def __init__(self, vocab_size: int, max_len: int, dim: int):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(0.5 * torch.randn(max_len, dim))
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        seq = ids.shape[1]
        return self.ln(self.tok(ids) + self.pos[:seq])


batch_size = 64
seq_len = 1024
dim = 1024
vocab_size = 32000
SMALL_SIZES = {"batch_size": 8, "seq_len": 256, "dim": 512, "vocab_size": 4000}
CHECK_SIZES = {"batch_size": 10, "seq_len": 320, "dim": 640, "vocab_size": 5000}


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab_size, seq_len, dim]
