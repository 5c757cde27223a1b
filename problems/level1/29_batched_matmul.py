import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Batched matrix multiplication: bmm of (b, m, k) and (b, k, n)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 128
m = 512
k = 1024
n = 512
SMALL_SIZES = {"batch_size": 16, "m": 128, "k": 256, "n": 128}
CHECK_SIZES = {"batch_size": 20, "m": 160, "k": 320, "n": 160}


def get_inputs():
    A = torch.randn(batch_size, m, k)
    B = torch.randn(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
