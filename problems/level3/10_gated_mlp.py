import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm residual GEGLU MLP: x + W_down(gelu(W_gate LN(x)) * W_up LN(x))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln(x)
        return x + self.down(F.gelu(self.gate(h)) * self.up(h))


batch_size = 8
seq_len = 1024
dim = 1024
hidden = 2816
SMALL_SIZES = {"batch_size": 2, "seq_len": 128, "dim": 256, "hidden": 704}
CHECK_SIZES = {"batch_size": 3, "seq_len": 160, "dim": 320, "hidden": 880}


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, hidden]
