import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Sequence encoder: bidirectional GRU, then a linear projection of every time step with tanh."""

    def __init__(self, input_size: int, hidden_size: int, out_features: int):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * hidden_size, out_features)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x, h0)
        return torch.tanh(self.proj(out))


batch_size = 32
seq_len = 256
input_size = 256
hidden_size = 256
out_features = 256
SMALL_SIZES = {
    "batch_size": 8,
    "seq_len": 32,
    "input_size": 64,
    "hidden_size": 64,
    "out_features": 64,
}
CHECK_SIZES = {"batch_size": 10, "seq_len": 40, "input_size": 80, "hidden_size": 80, "out_features": 80}


def get_inputs():
    x = torch.randn(batch_size, seq_len, input_size)
    h0 = 0.5 * torch.randn(2, batch_size, hidden_size)
    return [x, h0]


def get_init_inputs():
    return [input_size, hidden_size, out_features]
