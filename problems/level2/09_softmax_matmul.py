import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Row softmax of a batch of score matrices, then a batched matmul with values."""

    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return torch.bmm(torch.softmax(scores, dim=-1), values)


batch_size = 32
seq_len = 1024
head_dim = 256
SMALL_SIZES = {"batch_size": 4, "seq_len": 256, "head_dim": 64}
CHECK_SIZES = {"batch_size": 5, "seq_len": 320}


def get_inputs():
    scores = torch.randn(batch_size, seq_len, seq_len)
    values = torch.randn(batch_size, seq_len, head_dim)
    return [scores, values]


def get_init_inputs():
    return []
