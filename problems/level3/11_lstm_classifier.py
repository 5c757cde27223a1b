import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Text classifier: token embedding -> 2-layer LSTM -> linear head on the last time step."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_size: int, num_classes: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(ids))
        return self.head(out[:, -1, :])


batch_size = 64
seq_len = 128
vocab_size = 10000
embed_dim = 256
hidden_size = 512
num_classes = 16
SMALL_SIZES = {
    "batch_size": 8,
    "seq_len": 32,
    "vocab_size": 500,
    "embed_dim": 64,
    "hidden_size": 128,
}
CHECK_SIZES = {"batch_size": 10, "seq_len": 40, "vocab_size": 625, "embed_dim": 80, "hidden_size": 160}


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab_size, embed_dim, hidden_size, num_classes]
