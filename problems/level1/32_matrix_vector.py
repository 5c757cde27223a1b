import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matrix-vector product: (M x K) @ (K x 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 16384
K = 8192
SMALL_SIZES = {"M": 4096, "K": 1024}
CHECK_SIZES = {"M": 5120, "K": 1280}


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    return [A, B]


def get_init_inputs():
    return []
