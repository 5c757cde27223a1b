import torch
import torch.nn as nn

SEQ_LEN = 32
BATCH = 64
INPUT_SIZE = 256
HIDDEN_SIZE = 256


class Model(nn.Module):
    """LSTMCell stepped over a sequence in a Python loop; returns the final (h, c)."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor):
        h, c = h0, c0
        for t in range(x.shape[0]):
            h, c = self.cell(x[t], (h, c))
        return h, c


def get_inputs():
    return [
        torch.randn(SEQ_LEN, BATCH, INPUT_SIZE),
        torch.randn(BATCH, HIDDEN_SIZE),
        torch.randn(BATCH, HIDDEN_SIZE),
    ]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN_SIZE]


SMALL_SIZES = {"SEQ_LEN": 4, "BATCH": 8}
CHECK_SIZES = {"SEQ_LEN": 5, "BATCH": 10}
